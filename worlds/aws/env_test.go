package awsworld

import (
	"errors"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func baseEnv(extra map[string]string) map[string]string {
	m := map[string]string{
		EnvTable:            "wf",
		EnvQueueURL:         "https://sqs.us-east-1.amazonaws.com/1/wf-tasks",
		EnvQueueARN:         "arn:aws:sqs:us-east-1:1:wf-tasks",
		EnvSchedulerGroup:   "wf",
		EnvSchedulerRoleARN: "arn:aws:iam::1:role/wf-scheduler",
		EnvQueues:           `{"ordered":{"url":"https://sqs.us-east-1.amazonaws.com/1/wf-ordered.fifo","arn":"arn:aws:sqs:us-east-1:1:wf-ordered.fifo","fifo":true}}`,
	}
	for k, v := range extra {
		if v == "<unset>" {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	cfg, err := ConfigFromEnv(envOf(baseEnv(map[string]string{EnvRetention: "720h", EnvListShards: "32", EnvBaseURL: "https://wf.example.com/v1/workflow/"})), nopScheduler{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TableName != "wf" || cfg.Retention != 720*time.Hour || cfg.ListShards != 32 || cfg.BaseURL != "https://wf.example.com/v1/workflow" ||
		cfg.Scheduler == nil || cfg.Scheduler.Group != "wf" || cfg.Scheduler.TargetARN != "arn:aws:sqs:us-east-1:1:wf-tasks" ||
		!cfg.Queues["ordered"].FIFO || cfg.DeadLetterRetention != 0 {
		t.Fatalf("cfg = %+v", cfg)
	}
	w, err := New(cfg, &fakeDB{}, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := w.WebhookURL("a/b c"); !ok || u != "https://wf.example.com/v1/workflow/webhooks/a%2Fb%20c" {
		t.Fatalf("WebhookURL = %q, %v", u, ok)
	}

	bad := []struct {
		name string
		env  map[string]string
		vr   string
	}{
		{"no table", map[string]string{EnvTable: "<unset>"}, EnvTable},
		{"no queue", map[string]string{EnvQueueURL: "<unset>"}, EnvQueueURL},
		{"queues not JSON", map[string]string{EnvQueues: `{"a":`}, EnvQueues},
		{"retention not a duration", map[string]string{EnvRetention: "30 days"}, EnvRetention},
		{"negative retention", map[string]string{EnvRetention: "-1h"}, EnvRetention},
		{"long retention without scheduler", map[string]string{EnvRetention: "24h", EnvSchedulerRoleARN: "<unset>", EnvQueues: "{}"}, EnvRetention},
		{"shards not a number", map[string]string{EnvListShards: "many"}, EnvListShards},
		{"zero shards", map[string]string{EnvListShards: "0"}, EnvListShards},
		{"relative base URL", map[string]string{EnvBaseURL: "/v1/workflow"}, EnvBaseURL},
		{"scheduler without target", map[string]string{EnvQueueARN: "<unset>"}, EnvQueueARN},
		{"bad dead-letter retention", map[string]string{EnvDeadLetterRetention: "2 weeks"}, EnvDeadLetterRetention},
	}
	for _, tc := range bad {
		_, err := ConfigFromEnv(envOf(baseEnv(tc.env)), nopScheduler{})
		var ee *EnvError
		if !errors.As(err, &ee) || ee.Var != tc.vr || !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want an *EnvError for %s", tc.name, err, tc.vr)
		}
	}
	if _, err := ConfigFromEnv(envOf(baseEnv(nil)), nil); err == nil {
		t.Error("scheduler enabled without a client: no error")
	}
}

// A deployment whose environment disables retention cannot expire runs; New
// rejects a Retention set on its Config afterwards. Without Scheduler, a
// retention over 15 minutes is rejected as before.
func TestRetentionMustMatchTheDeployment(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "0s"} {
		cfg, err := ConfigFromEnv(envOf(baseEnv(map[string]string{EnvRetention: raw})), nopScheduler{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg, &fakeDB{}, &fakeSQS{}); err != nil {
			t.Fatalf("retention off as deployed: %v", err)
		}
		cfg.Retention = time.Hour
		var ce *ConfigError
		if _, err := New(cfg, &fakeDB{}, &fakeSQS{}); !errors.As(err, &ce) || ce.Field != "Retention" {
			t.Fatalf("WORKFLOW_RETENTION=%q with Config.Retention set: err = %v", raw, err)
		}
		cfg.Retention = 0
		cfg.Retentions = map[string]time.Duration{"flows.A": time.Hour}
		if _, err := New(cfg, &fakeDB{}, &fakeSQS{}); !errors.As(err, &ce) || ce.Field != `Retentions["flows.A"]` {
			t.Fatalf("WORKFLOW_RETENTION=%q with Config.Retentions set: err = %v", raw, err)
		}
	}
	cfg, err := ConfigFromEnv(envOf(baseEnv(map[string]string{EnvRetention: "10m", EnvSchedulerRoleARN: "<unset>", EnvQueues: "{}"})), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retention = time.Hour // longer than the deployment's Scheduler-less roles allow
	var ce *ConfigError
	if _, err := New(cfg, &fakeDB{}, &fakeSQS{}); !errors.As(err, &ce) || ce.Field != "Retention" {
		t.Fatalf("retention over 15m without Scheduler: %v", err)
	}
}
