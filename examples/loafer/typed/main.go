// Command typed consumes order events from an SQS queue with a typed handler
// behind a middleware chain, and publishes a typed confirmation to an SNS
// topic for each one: a loafer-awsx program whose only change is the import
// path. It runs one consumer (consumer.New) rather than a broker, builds its
// clients with the client package, which checks at start-up that SQS and SNS
// answer, and exports Prometheus metrics.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/consumer"
	messagingerrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

const (
	region    = "us-east-1"
	accountID = "000000000000"
	queueName = "example-typed-orders"
	topicName = "example-typed-confirmations"
	// maxReceiveCount is the queue's redrive policy's maxReceiveCount.
	maxReceiveCount = 3
)

// order is the event producers send to the queue.
type order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer"`
	Total    float64 `json:"total"`
}

// confirmation is what the program publishes for each valid order.
type confirmation struct {
	OrderID  string `json:"order_id"`
	Customer string `json:"customer"`
	Message  string `json:"message"`
}

// errInvalidOrder marks an order no retry can fix.
var errInvalidOrder = errors.New("invalid order")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := conn.New(ctx,
		conn.WithRegion(region),
		conn.WithAccessKey("test", "test"),
		conn.WithEndpoint("http://localhost:4566"),
	)
	if err != nil {
		log.Fatalf("aws config: %v", err)
	}
	sqsClient, err := client.NewSQS(ctx, cfg, client.WithPingTimeout(5*time.Second), client.WithPingRetryLimit(3))
	if err != nil {
		log.Fatalf("sqs: %v", err)
	}
	snsClient, err := client.NewSNS(ctx, cfg, client.WithPingTimeout(5*time.Second))
	if err != nil {
		log.Fatalf("sns: %v", err)
	}
	topicARN := producer.BuildTopicARN(region, accountID, topicName)
	if err := run(ctx, sqsClient, snsClient, prometheus.DefaultRegisterer, queueName, topicARN); err != nil {
		log.Fatalf("consumer: %v", err)
	}
}

// run consumes queue until ctx is canceled, publishing a confirmation to
// topicARN for each order; metrics are registered with reg.
func run(ctx context.Context, sqsClient consumer.SQSClient, snsClient producer.SNSClient, reg prometheus.Registerer, queue, topicARN string) error {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	p, err := producer.New(snsClient)
	if err != nil {
		return err
	}
	confirmations := typed.NewProducer(p, typed.JSONCodec[confirmation]{})
	handle := func(ctx context.Context, o order) error {
		if o.ID == "" || o.Total <= 0 {
			// Fatal: no retry can fix it, so it is released at once for the
			// queue's redrive policy, which moves it to the dead-letter queue;
			// the handler does not run again on the receives on the way there.
			return messagingerrors.Fatal(fmt.Errorf("%w: id %q, total %v", errInvalidOrder, o.ID, o.Total))
		}
		_, err := confirmations.Publish(ctx, topicARN, confirmation{
			OrderID:  o.ID,
			Customer: o.Customer,
			Message:  fmt.Sprintf("order %s of %.2f confirmed", o.ID, o.Total),
		}, typed.WithAttributes(map[string]string{"event": "order.confirmed"}))
		return err
	}
	route, err := router.New(queue, typed.WrapHandler(typed.JSONCodec[order]{}, handle),
		router.WithMiddleware(
			middleware.Recovery(logger),
			middleware.Logging(logger),
			middleware.Metrics(queue, middleware.WithMetricsRegisterer(reg)),
		),
		router.WithVisibilityTimeout(30),
		router.WithMaxMessages(10),
		router.WithDLQ(maxReceiveCount),
	)
	if err != nil {
		return err
	}
	c, err := consumer.New(sqsClient, route,
		consumer.WithLogger(logger),
		consumer.WithShutdownTimeout(10*time.Second),
	)
	if err != nil {
		return err
	}
	logger.Info("consuming", "queue", queue, "topic", topicARN)
	return c.Run(ctx)
}
