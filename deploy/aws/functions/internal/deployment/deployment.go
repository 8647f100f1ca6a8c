// Package deployment opens the AWS World of a deploy/aws deployment inside its
// Lambda functions, from the environment the Terraform root sets
// (WORKFLOW_TABLE, WORKFLOW_QUEUE_URL, WORKFLOW_QUEUES, the Scheduler variables,
// WORKFLOW_RETENTION and WORKFLOW_BASE_URL), with the function's AWS credentials.
package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Logger is the functions' logger: JSON at Info on stderr, which Lambda sends to
// the function's log group.
func Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stderr, nil)) }

// Open builds the World from getenv (os.Getenv) and the default AWS
// configuration. baseURL, when not empty, replaces WORKFLOW_BASE_URL.
func Open(ctx context.Context, getenv func(string) string, baseURL string, logger *slog.Logger) (*awsworld.World, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	cfg, err := Config(getenv, scheduler.NewFromConfig(awsCfg))
	if err != nil {
		return nil, err
	}
	if baseURL != "" {
		cfg.BaseURL = baseURL
	}
	cfg.Logger = logger
	return awsworld.New(cfg, dynamodb.NewFromConfig(awsCfg), sqs.NewFromConfig(awsCfg))
}

// Config reads the World's configuration from the variables of the Terraform
// module's environment output; sched is used when the Scheduler is enabled.
func Config(getenv func(string) string, sched awsworld.SchedulerAPI) (awsworld.Config, error) {
	c := awsworld.Config{
		BaseURL:   strings.TrimRight(getenv("WORKFLOW_BASE_URL"), "/"),
		TableName: getenv("WORKFLOW_TABLE"),
		QueueURL:  getenv("WORKFLOW_QUEUE_URL"),
	}
	if raw := strings.TrimSpace(getenv("WORKFLOW_QUEUES")); raw != "" && raw != "{}" {
		var qs map[string]struct {
			URL  string `json:"url"`
			ARN  string `json:"arn"`
			FIFO bool   `json:"fifo"`
		}
		if err := json.Unmarshal([]byte(raw), &qs); err != nil {
			return c, fmt.Errorf("WORKFLOW_QUEUES %q: not a JSON object of {url, arn, fifo} by queue name: %w", raw, err)
		}
		c.Queues = make(map[string]awsworld.QueueConfig, len(qs))
		for name, q := range qs {
			c.Queues[name] = awsworld.QueueConfig{URL: q.URL, ARN: q.ARN, FIFO: q.FIFO}
		}
	}
	if role := getenv("WORKFLOW_SCHEDULER_ROLE_ARN"); role != "" {
		c.Scheduler = &awsworld.SchedulerConfig{
			Client:    sched,
			Group:     getenv("WORKFLOW_SCHEDULER_GROUP"),
			TargetARN: getenv("WORKFLOW_QUEUE_ARN"),
			RoleARN:   role,
		}
	}
	if raw := strings.TrimSpace(getenv("WORKFLOW_RETENTION")); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 {
			return c, fmt.Errorf("WORKFLOW_RETENTION %q: want a non-negative Go duration such as 720h", raw)
		}
		c.Retention = d
	}
	return c, nil
}
