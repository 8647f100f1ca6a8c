// Command aws is the AWS World deployment from the seed's usage example: one
// binary for two Lambda functions sharing one World. With ROLE=worker it is the
// SQS queue worker running the GenerateReport workflow; otherwise it serves the
// RPC and webhook endpoints on a Function URL. Provision the table, queues and
// policies with worlds/aws/terraform and pass its environment output to both.
package main

import (
	"context"
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

func main() {
	ctx := context.Background()
	aws, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// The variables of the Terraform module's environment output.
	cfg, err := awsworld.ConfigFromEnv(os.Getenv, scheduler.NewFromConfig(aws))
	if err != nil {
		log.Fatal(err)
	}
	world, err := awsworld.New(cfg, dynamodb.NewFromConfig(aws), sqs.NewFromConfig(aws))
	if err != nil {
		log.Fatal(err)
	}
	if os.Getenv("ROLE") == "worker" {
		lambda.Start(awsworld.Queue(world, worlds.Runners(workflow.Use(GenerateReport{}))))
		return
	}
	lambdaurl.Start(awsworld.HTTP(world))
}
