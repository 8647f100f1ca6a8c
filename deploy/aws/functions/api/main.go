// Command api is the deploy/aws RPC function behind an AWS_IAM Function URL in
// RESPONSE_STREAM mode (lambdaurl streams its responses): the cairn CLI signs its
// requests to it. It runs no workflows (starting or resuming a run queues it for
// the worker) but knows the worker's registry, flows.Runners: runs.start refuses
// a workflow the worker does not run, naming the ones it does.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/cairn-go/cairn/deploy/aws/flows"
	"github.com/cairn-go/cairn/deploy/aws/functions/internal/deployment"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func main() {
	log := deployment.Logger()
	world, err := deployment.Open(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("api: cannot open the World", "err", err)
		os.Exit(1)
	}
	lambdaurl.Start(awsworld.HTTP(world, awsworld.WithWorkflows(flows.Runners())))
}
