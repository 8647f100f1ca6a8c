// Command sweeper is the deploy/aws orphan sweeper, invoked by an EventBridge
// Scheduler cron: each run sends again the deliveries whose SQS message is gone
// (awsworld.Sweep), so no run waits forever on a message lost in a crash or
// dropped from a dead-letter queue. Its result is logged by Lambda.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-go/cairn/deploy/aws/functions/internal/deployment"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func main() {
	log := deployment.Logger()
	world, err := deployment.Open(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("sweeper: cannot open the World", "err", err)
		os.Exit(1)
	}
	lambda.Start(awsworld.Sweep(world))
}
