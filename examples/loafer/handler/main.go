// Command handler consumes a standard SQS queue with a plain handler, written
// against loafer-awsx's API: only the import paths name cairn.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

const queueName = "example-handler-queue"

// userEvent is the JSON body producers send.
type userEvent struct {
	ID   string `json:"id"`
	Text string `json:"text"`
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
	// NewSQS checks that SQS answers, so a wrong endpoint or credential
	// fails here rather than at the first receive.
	sqsClient, err := client.NewSQS(ctx, cfg)
	if err != nil {
		log.Fatalf("sqs: %v", err)
	}
	if err := run(ctx, sqsClient, queueName); err != nil {
		log.Fatalf("broker: %v", err)
	}
}

// run consumes queue until ctx is canceled.
func run(ctx context.Context, client consumer.SQSClient, queue string) error {
	// Delete handled messages ten per DeleteMessageBatch request.
	route, err := router.New(queue, handleMessage, router.WithDeleteBatch())
	if err != nil {
		return err
	}
	b, err := broker.New(client, []*router.Route{route}, broker.WithLogger(logger.New()))
	if err != nil {
		return err
	}
	return b.Run(ctx)
}

// handleMessage decodes the body; a returned error leaves the message for
// redelivery, nil deletes it.
func handleMessage(_ context.Context, msg middleware.Message) error {
	var ev userEvent
	if err := msg.Decode(&ev); err != nil {
		return err
	}
	log.Printf("user event id=%q text=%q source=%q", ev.ID, ev.Text, msg.Attribute("source"))
	return nil
}
