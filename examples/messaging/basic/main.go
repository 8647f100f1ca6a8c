// Command basic consumes a standard and a FIFO queue through one broker.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

type Order struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := logger.New()
	if err := run(ctx, log); err != nil {
		log.Error("basic", slog.Any("error", err))
		os.Exit(1)
	}
}

func awsConfig(ctx context.Context, endpoint string) (aws.Config, error) {
	opts := []conn.Option{conn.WithRegion(envOr("AWS_REGION", "us-east-1"))}
	if k := os.Getenv("AWS_ACCESS_KEY_ID"); k != "" {
		opts = append(opts, conn.WithAccessKey(k, os.Getenv("AWS_SECRET_ACCESS_KEY")))
	}
	if endpoint != "" {
		opts = append(opts, conn.WithEndpoint(endpoint))
	}
	return conn.New(ctx, opts...)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, log *slog.Logger) error {
	cfg, err := awsConfig(ctx, os.Getenv("SQS_ENDPOINT"))
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	for _, q := range []struct {
		name string
		fifo bool
	}{{"cairn-example-events", false}, {"cairn-example-orders.fifo", true}} {
		attrs := map[string]string{}
		if q.fifo {
			attrs["FifoQueue"] = "true"
		}
		if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.name), Attributes: attrs}); err != nil {
			return err
		}
	}

	events, err := router.New("cairn-example-events", func(ctx context.Context, msg middleware.Message) error {
		log.Info("event", slog.String("body", string(msg.Body())))
		return nil
	}, router.WithWorkerPoolSize(8), router.WithPollers(2), router.WithDLQ(5), router.WithDeleteBatch())
	if err != nil {
		return err
	}
	orders, err := router.New("cairn-example-orders.fifo",
		typed.WrapHandler(typed.JSONCodec[Order]{}, func(ctx context.Context, o Order) error {
			log.Info("order", slog.String("id", o.ID), slog.String("tenant", o.Tenant))
			return nil
		}),
		router.WithRunMode(router.PerGroupID), router.WithCustomGroupFields("tenant"),
		router.WithMiddleware(middleware.Metrics("orders"), middleware.OTel("orders")))
	if err != nil {
		return err
	}
	b, err := broker.New(client, []*router.Route{events, orders},
		broker.WithLogger(log),
		broker.WithMiddleware(middleware.Recovery(log), middleware.Logging(log)),
		broker.WithDLQMetric(middleware.DLQCounter()),
		broker.WithShutdownTimeout(30*time.Second))
	if err != nil {
		return err
	}
	if os.Getenv("CAIRN_EXAMPLE_ONESHOT") != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
	}
	return b.Run(ctx)
}
