// Command scheduled is loafer-awsx's Scheduled Retry (FIFO) program: a failing
// handler's messages are re-published later through EventBridge Scheduler
// and the original is deleted so its MessageGroupId is free at once.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := logger.New()

	cfg, err := conn.New(ctx, conn.WithRegion("us-east-1"))
	if err != nil {
		log.Error("failed to build AWS config", slog.Any("error", err))
		return
	}
	sqsClient := sqs.NewFromConfig(cfg)
	schedulerClient := scheduler.NewFromConfig(cfg)

	handler := func(ctx context.Context, msg middleware.Message) error {
		// Return an error (or ask for a delay with middleware.Backoff(msg, d)) to exercise the scheduled-retry path.
		return errors.New("transient failure")
	}

	route, err := router.New("orders.fifo", handler,
		router.WithRunMode(router.PerGroupID),
		router.WithScheduledRetry(
			router.WithSchedulerIdentity(
				"arn:aws:sqs:us-east-1:000000000000:orders.fifo",      // target Entry_Queue ARN
				"arn:aws:iam::000000000000:role/cairn-scheduler-role", // execution role ARN
			),
			router.WithScheduledDLQ("https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq.fifo"),
			router.WithMaxRetryCount(5),
			router.WithBackoff(1*time.Second, 15*time.Minute),
		),
	)
	if err != nil {
		log.Error("failed to build route", slog.Any("error", err))
		return
	}

	// consumer.New directly here; broker.WithSchedulerClient and the broker
	// metric options forward the same settings when you run several routes.
	c, err := consumer.New(sqsClient, route,
		consumer.WithLogger(log),
		consumer.WithSchedulerClient(schedulerClient),
		consumer.WithSuccessMetric(func(routeName string) { log.Info("success", slog.String("route", routeName)) }),
		consumer.WithRetryMetric(func(routeName string) { log.Info("retry", slog.String("route", routeName)) }),
		consumer.WithDeadLetterMetric(func(routeName string) { log.Info("dead-letter", slog.String("route", routeName)) }),
	)
	if err != nil {
		log.Error("failed to build consumer", slog.Any("error", err))
		return
	}
	if err := c.Run(ctx); err != nil {
		log.Error("consumer stopped", slog.Any("error", err))
	}
}
