// Command worker is the deploy/aws queue worker: the SQS event source of every
// workflow queue invokes it with batches of deliveries, and it runs the
// workflows registered in flows.Runners. Add your workflows there.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-go/cairn/deploy/aws/flows"
	"github.com/cairn-go/cairn/deploy/aws/functions/internal/deployment"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func main() {
	log := deployment.Logger()
	world, err := deployment.Open(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("worker: cannot open the World", "err", err)
		os.Exit(1)
	}
	lambda.Start(awsworld.Queue(world, flows.Runners()))
}
