package deployment

import (
	"testing"
	"time"
)

func TestConfigReadsTheModulesEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"WORKFLOW_TABLE":              "t",
		"WORKFLOW_QUEUE_URL":          "https://sqs.eu-west-1.amazonaws.com/1/t-tasks",
		"WORKFLOW_QUEUE_ARN":          "arn:aws:sqs:eu-west-1:1:t-tasks",
		"WORKFLOW_QUEUES":             `{"ordered":{"url":"https://sqs/1/t-ordered.fifo","arn":"arn:q","fifo":true}}`,
		"WORKFLOW_SCHEDULER_GROUP":    "t",
		"WORKFLOW_SCHEDULER_ROLE_ARN": "arn:aws:iam::1:role/t-scheduler",
		"WORKFLOW_RETENTION":          "72h",
		"WORKFLOW_BASE_URL":           "https://hooks.example.com/v1/workflow/",
	}
	c, err := Config(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.TableName != "t" || c.QueueURL != env["WORKFLOW_QUEUE_URL"] || c.BaseURL != "https://hooks.example.com/v1/workflow" || c.Retention != 72*time.Hour {
		t.Errorf("config %+v", c)
	}
	if q := c.Queues["ordered"]; !q.FIFO || q.ARN != "arn:q" {
		t.Errorf("queues %+v", c.Queues)
	}
	if s := c.Scheduler; s == nil || s.Group != "t" || s.TargetARN != env["WORKFLOW_QUEUE_ARN"] || s.RoleARN != env["WORKFLOW_SCHEDULER_ROLE_ARN"] {
		t.Errorf("scheduler %+v", c.Scheduler)
	}
	for k, v := range map[string]string{"WORKFLOW_RETENTION": "3 days", "WORKFLOW_QUEUES": "[1]"} {
		bad := map[string]string{k: v}
		if _, err := Config(func(name string) string { return bad[name] }, nil); err == nil {
			t.Errorf("%s=%q accepted", k, v)
		}
	}
}
