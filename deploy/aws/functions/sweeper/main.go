// Command sweeper is the deploy/aws orphan sweeper, invoked by an EventBridge
// Scheduler cron: each run sends again the deliveries whose SQS message is gone
// (awsworld.Sweep), so no run waits forever on a message lost in a crash or
// dropped from a dead-letter queue. Its counts are published as CloudWatch
// metrics in an EMF log line (namespace CAIRN_METRICS_NAMESPACE, dimension
// Deployment = CAIRN_METRICS_DEPLOYMENT), which the overdue alarm watches.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-go/cairn/deploy/aws/functions/internal/deployment"
	"github.com/cairn-go/cairn/deploy/aws/functions/internal/metrics"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func main() {
	log := deployment.Logger()
	world, err := deployment.Open(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("sweeper: cannot open the World", "err", err)
		os.Exit(1)
	}
	m := metrics.Sweep{Namespace: os.Getenv("CAIRN_METRICS_NAMESPACE"), Deployment: os.Getenv("CAIRN_METRICS_DEPLOYMENT"), Now: time.Now}
	sweep := awsworld.Sweep(world)
	lambda.Start(func(ctx context.Context) (awsworld.SweepResult, error) {
		res, err := sweep(ctx)
		// A sweep that failed part-way still reports what it did.
		if m.Namespace != "" && m.Deployment != "" {
			if werr := m.Write(os.Stdout, res); werr != nil {
				log.ErrorContext(ctx, "sweeper: cannot write metrics", "err", werr)
			}
		}
		return res, err
	})
}
