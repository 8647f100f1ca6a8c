// Command aws is the AWS World deployment from the seed's usage example: one
// binary for two Lambda functions sharing one World. With ROLE=worker it is the
// SQS queue worker running the GenerateReport workflow; otherwise it serves the
// RPC and webhook endpoints on a Function URL. Provision the table, queues and
// policies with worlds/aws/terraform and pass its environment output to both.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// GenerateReport is a workflow with one step.
type GenerateReport struct{}

// Run renders the report for an account.
func (GenerateReport) Run(ctx workflow.Context, account string) (string, error) {
	return workflow.Step(ctx, "render", func(_ context.Context, a string) (string, error) {
		return "report for " + strings.ToUpper(a), nil
	}, account)
}

// configFromEnv reads the variables of the Terraform module's environment output.
func configFromEnv(ctx context.Context) (awsworld.Config, *dynamodb.Client, *sqs.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return awsworld.Config{}, nil, nil, err
	}
	c := awsworld.Config{
		BaseURL:   os.Getenv("WORKFLOW_BASE_URL"),
		TableName: os.Getenv("WORKFLOW_TABLE"),
		QueueURL:  os.Getenv("WORKFLOW_QUEUE_URL"),
	}
	if raw := os.Getenv("WORKFLOW_QUEUES"); raw != "" && raw != "{}" {
		var qs map[string]struct {
			URL  string `json:"url"`
			ARN  string `json:"arn"`
			FIFO bool   `json:"fifo"`
		}
		if err := json.Unmarshal([]byte(raw), &qs); err != nil {
			return c, nil, nil, fmt.Errorf("WORKFLOW_QUEUES: %w", err)
		}
		c.Queues = map[string]awsworld.QueueConfig{}
		for name, q := range qs {
			c.Queues[name] = awsworld.QueueConfig{URL: q.URL, ARN: q.ARN, FIFO: q.FIFO}
		}
	}
	if role := os.Getenv("WORKFLOW_SCHEDULER_ROLE_ARN"); role != "" {
		c.Scheduler = &awsworld.SchedulerConfig{
			Client:    scheduler.NewFromConfig(cfg),
			Group:     os.Getenv("WORKFLOW_SCHEDULER_GROUP"),
			TargetARN: os.Getenv("WORKFLOW_QUEUE_ARN"),
			RoleARN:   role,
		}
	}
	return c, dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg), nil
}

func main() {
	ctx := context.Background()
	cfg, db, q, err := configFromEnv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	world, err := awsworld.New(cfg, db, q)
	if err != nil {
		log.Fatal(err)
	}
	if os.Getenv("ROLE") == "worker" {
		lambda.Start(awsworld.Queue(world, worlds.Runners(workflow.Use(GenerateReport{}))))
		return
	}
	lambdaurl.Start(awsworld.HTTP(world))
}
