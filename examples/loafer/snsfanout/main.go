// Command snsfanout consumes a queue subscribed to an SNS topic without raw
// message delivery: every SQS body is the SNS notification envelope, and the
// handler reads the published message and its attributes through
// DecodeMessage, Message and Attribute. It is written against loafer-awsx's
// API: only the import paths name cairn.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

const queueName = "example-fanout-queue"

// orderPlaced is the message published to the topic.
type orderPlaced struct {
	OrderID string  `json:"order_id"`
	Total   float64 `json:"total"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := conn.New(ctx,
		conn.WithRegion("us-east-1"),
		conn.WithAccessKey("test", "test"),
		conn.WithEndpoint("http://localhost:4566"),
	)
	if err != nil {
		log.Fatalf("aws config: %v", err)
	}
	if err := run(ctx, sqs.NewFromConfig(cfg), queueName, handleOrder); err != nil {
		log.Fatalf("broker: %v", err)
	}
}

// run consumes queue with h until ctx is canceled.
func run(ctx context.Context, client consumer.SQSClient, queue string, h middleware.Handler) error {
	route, err := router.New(queue, h)
	if err != nil {
		return err
	}
	b, err := broker.New(client, []*router.Route{route}, broker.WithLogger(logger.New()))
	if err != nil {
		return err
	}
	return b.Run(ctx)
}

func handleOrder(_ context.Context, msg middleware.Message) error {
	var o orderPlaced
	if err := msg.DecodeMessage(&o); err != nil {
		return err
	}
	log.Printf("order %s total %.2f event_type=%q published at %s (raw: %s)",
		o.OrderID, o.Total, msg.Attribute("event_type"), msg.TimeStamp(), msg.Message())
	return nil
}
