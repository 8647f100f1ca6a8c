// Command scheduledretry is the Scheduled Retry (FIFO) program of the
// loafer-awsx specification with its import paths changed to cairn and its
// wiring moved into run, so that its test can walk a message through every
// retry to the DLQ.
package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func main() {
	ctx := context.Background()
	log := logger.New()

	cfg, err := conn.New(ctx, conn.WithRegion("us-east-1"))
	if err != nil {
		log.Error("failed to build AWS config", slog.Any("error", err))
		return
	}

	if err := run(ctx, log, sqs.NewFromConfig(cfg), scheduler.NewFromConfig(cfg)); err != nil {
		log.Error("consumer stopped", slog.Any("error", err))
	}
}

// run is the rest of the specification's program, given its clients, so a
// test can drive it against the in-memory SQS and Scheduler.
func run(ctx context.Context, log *slog.Logger, sqsClient consumer.SQSClient, schedulerClient consumer.SchedulerClient) error {
	handler := func(ctx context.Context, msg middleware.Message) error {
		// Return an error (or call Backoff on msg as a consumer.Message) to exercise the scheduled-retry path.
		return errors.New("transient failure")
	}

	route, err := router.New("orders.fifo", handler,
		router.WithRunMode(router.PerGroupID),
		router.WithScheduledRetry(
			router.WithSchedulerIdentity(
				"arn:aws:sqs:us-east-1:000000000000:orders.fifo",       // target Entry_Queue ARN
				"arn:aws:iam::000000000000:role/loafer-scheduler-role", // execution role ARN
			),
			router.WithScheduledDLQ("https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq.fifo"),
			router.WithMaxRetryCount(5),
			router.WithBackoff(1*time.Second, 15*time.Minute),
		),
	)
	if err != nil {
		return err
	}

	// The Scheduled model is wired through consumer.New directly, not broker.New:
	// the scheduler client and metric hooks are consumer options.
	c, err := consumer.New(sqsClient, route,
		consumer.WithLogger(log),
		consumer.WithSchedulerClient(schedulerClient),
		consumer.WithSuccessMetric(func(routeName string) { log.Info("success", slog.String("route", routeName)) }),
		consumer.WithRetryMetric(func(routeName string) { log.Info("retry", slog.String("route", routeName)) }),
		consumer.WithDeadLetterMetric(func(routeName string) { log.Info("dead-letter", slog.String("route", routeName)) }),
	)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
