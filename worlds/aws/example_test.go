package awsworld_test

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// The worker and the API are two Lambda functions sharing one World. The worker
// registers runners (workflow.Use(...) from the workflow package); the API needs none.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	world, err := awsworld.New(awsworld.Config{
		BaseURL:   os.Getenv("WORKFLOW_BASE_URL"), // https://workflows.example.com/v1/workflow
		TableName: os.Getenv("WORKFLOW_TABLE"),
		QueueURL:  os.Getenv("WORKFLOW_QUEUE_URL"),
		Scheduler: &awsworld.SchedulerConfig{
			Client:    scheduler.NewFromConfig(cfg),
			Group:     os.Getenv("WORKFLOW_SCHEDULER_GROUP"),
			TargetARN: os.Getenv("WORKFLOW_QUEUE_ARN"),
			RoleARN:   os.Getenv("WORKFLOW_SCHEDULER_ROLE_ARN"),
		},
	}, dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg))
	if err != nil {
		log.Fatal(err)
	}
	if os.Getenv("ROLE") == "worker" {
		var runners []worlds.Runner // workflow.Use(flows.GenerateReport{}), ...
		lambda.Start(awsworld.Queue(world, worlds.Runners(runners...)))
		return
	}
	lambdaurl.Start(awsworld.HTTP(world))
}
