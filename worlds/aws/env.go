package awsworld

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Environment variables [ConfigFromEnv] reads: the Terraform module's
// environment output.
const (
	EnvTable               = "WORKFLOW_TABLE"                 // Config.TableName; required
	EnvQueueURL            = "WORKFLOW_QUEUE_URL"             // Config.QueueURL; required
	EnvQueues              = "WORKFLOW_QUEUES"                // Config.Queues as JSON {"<name>":{"url","arn","fifo"}}
	EnvQueueARN            = "WORKFLOW_QUEUE_ARN"             // Scheduler.TargetARN
	EnvSchedulerGroup      = "WORKFLOW_SCHEDULER_GROUP"       // Scheduler.Group
	EnvSchedulerRoleARN    = "WORKFLOW_SCHEDULER_ROLE_ARN"    // Scheduler.RoleARN; set means Scheduler is enabled
	EnvBaseURL             = "WORKFLOW_BASE_URL"              // Config.BaseURL; optional
	EnvRetention           = "WORKFLOW_RETENTION"             // Config.Retention as a Go duration; "" or "0s" keeps runs
	EnvListShards          = "WORKFLOW_LIST_SHARDS"           // Config.ListShards; default 16
	EnvDeadLetterRetention = "WORKFLOW_DEAD_LETTER_RETENTION" // Config.DeadLetterRetention as a Go duration; optional
)

// EnvError reports an environment variable [ConfigFromEnv] cannot use, naming
// it and its value. It matches [worlds.ErrInvalidArgument].
type EnvError struct {
	Var, Value, Reason string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("awsworld: environment variable %s=%q: %s", e.Var, e.Value, e.Reason)
}

// Is matches [worlds.ErrInvalidArgument].
func (e *EnvError) Is(target error) bool { return target == worlds.ErrInvalidArgument }

// ConfigFromEnv builds a Config from the variables the Terraform module's
// environment output sets (the Env* constants), read with getenv (os.Getenv).
// sched is the EventBridge Scheduler client, used when WORKFLOW_SCHEDULER_ROLE_ARN
// is set; it may be nil otherwise. The Config records the deployment's
// retention, so [New] rejects a Retention the deployment's IAM grants cannot
// carry out; set Clock, Logger, Routes and the like on the result. Each unusable
// variable is reported as an *[EnvError].
//
//	cfg, err := awsworld.ConfigFromEnv(os.Getenv, scheduler.NewFromConfig(awsCfg))
func ConfigFromEnv(getenv func(string) string, sched SchedulerAPI) (Config, error) {
	c := Config{TableName: getenv(EnvTable), QueueURL: getenv(EnvQueueURL), BaseURL: strings.TrimRight(getenv(EnvBaseURL), "/")}
	if c.TableName == "" {
		return c, &EnvError{Var: EnvTable, Reason: "required: the workflow table's name"}
	}
	if c.QueueURL == "" {
		return c, &EnvError{Var: EnvQueueURL, Reason: "required: the task queue's URL"}
	}
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return c, &EnvError{Var: EnvBaseURL, Value: c.BaseURL, Reason: "must be an absolute URL ending in /v1/workflow"}
		}
	}
	if raw := strings.TrimSpace(getenv(EnvQueues)); raw != "" && raw != "{}" {
		var qs map[string]struct {
			URL  string `json:"url"`
			ARN  string `json:"arn"`
			FIFO bool   `json:"fifo"`
		}
		if err := json.Unmarshal([]byte(raw), &qs); err != nil {
			return c, &EnvError{Var: EnvQueues, Value: raw, Reason: "not a JSON object of {url, arn, fifo} by queue name: " + err.Error()}
		}
		c.Queues = make(map[string]QueueConfig, len(qs))
		for name, q := range qs {
			c.Queues[name] = QueueConfig{URL: q.URL, ARN: q.ARN, FIFO: q.FIFO}
		}
	}
	if role := getenv(EnvSchedulerRoleARN); role != "" {
		if sched == nil {
			return c, &EnvError{Var: EnvSchedulerRoleARN, Value: role, Reason: "Scheduler is enabled but ConfigFromEnv got no Scheduler client"}
		}
		target := getenv(EnvQueueARN)
		if target == "" {
			return c, &EnvError{Var: EnvQueueARN, Reason: "required with " + EnvSchedulerRoleARN + ": the task queue's ARN"}
		}
		c.Scheduler = &SchedulerConfig{Client: sched, Group: getenv(EnvSchedulerGroup), TargetARN: target, RoleARN: role}
	}
	raw := strings.TrimSpace(getenv(EnvRetention))
	ret, err := envDuration(EnvRetention, raw)
	if err != nil {
		return c, err
	}
	if ret > MaxSQSDelay && c.Scheduler == nil {
		return c, &EnvError{Var: EnvRetention, Value: raw, Reason: "over 15 minutes needs Scheduler, but " + EnvSchedulerRoleARN + " is unset (enable the module's scheduler)"}
	}
	c.Retention = ret
	c.env = &envGrants{retention: ret}
	if raw := strings.TrimSpace(getenv(EnvListShards)); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxListShards {
			return c, &EnvError{Var: EnvListShards, Value: raw, Reason: fmt.Sprintf("must be an integer within [1, %d]", maxListShards)}
		}
		c.ListShards = n
	}
	raw = strings.TrimSpace(getenv(EnvDeadLetterRetention))
	if c.DeadLetterRetention, err = envDuration(EnvDeadLetterRetention, raw); err != nil {
		return c, err
	}
	return c, nil
}

func envDuration(name, raw string) (time.Duration, error) {
	if raw == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, &EnvError{Var: name, Value: raw, Reason: `must be a non-negative Go duration such as "720h"`}
	}
	return d, nil
}

// envGrants is what the deployment ConfigFromEnv read from can do.
type envGrants struct {
	// retention is WORKFLOW_RETENTION: zero when the module granted no expiry
	// (dynamodb:BatchWriteItem for the worker, scheduler:CreateSchedule for the
	// API's cancels).
	retention time.Duration
}

// validateGrants rejects a retention the deployment cannot carry out.
func validateGrants(c *Config) error {
	if c.env == nil || c.env.retention > 0 {
		return nil
	}
	reason := "the deployment disables retention (" + EnvRetention + " is unset or 0s), so its roles may not delete expired runs; set the module's retention instead"
	if c.Retention > 0 {
		return &ConfigError{Field: "Retention", Value: c.Retention, Reason: reason}
	}
	for wf, d := range c.Retentions {
		if d > 0 {
			return &ConfigError{Field: fmt.Sprintf("Retentions[%q]", wf), Value: d, Reason: reason}
		}
	}
	return nil
}
