// Command worker is the orders deployment's queue worker: the AWS World's
// queue invokes it with batches of deliveries, and it runs the fulfilment
// workflow.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-go/cairn/examples/orders/fulfil"
	"github.com/cairn-go/cairn/workflow"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	d, err := fulfil.OpenAWS(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("worker: cannot open the deployment", "err", err)
		os.Exit(1)
	}
	lambda.Start(awsworld.Queue(d.World, d.Client.Runner(workflow.Use(d.Workflow))))
}
