// Command fifo consumes a FIFO queue in PerGroupID mode: messages that share
// a MessageGroupId and the custom group fields run one at a time, in order.
// It is written against loafer-awsx's API: only the import paths name cairn.
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

const queueName = "example-fifo-queue.fifo"

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
	if err := run(ctx, sqs.NewFromConfig(cfg), queueName, handleMessage); err != nil {
		log.Fatalf("broker: %v", err)
	}
}

// run consumes queue with h until ctx is canceled.
func run(ctx context.Context, client consumer.SQSClient, queue string, h middleware.Handler) error {
	route, err := router.New(queue, h,
		router.WithRunMode(router.PerGroupID),
		router.WithCustomGroupFields("tenant_id", "order_id"),
		router.WithWorkerPoolSize(5),
	)
	if err != nil {
		return err
	}
	b, err := broker.New(client, []*router.Route{route}, broker.WithLogger(logger.New()))
	if err != nil {
		return err
	}
	return b.Run(ctx)
}

func handleMessage(_ context.Context, msg middleware.Message) error {
	var payload struct {
		Event string `json:"event"`
	}
	if err := msg.Decode(&payload); err != nil {
		return err
	}
	log.Printf("tenant=%q order=%q group=%q event=%q", msg.Attribute("tenant_id"), msg.Attribute("order_id"),
		msg.SystemAttributeByKey("MessageGroupId"), payload.Event)
	return nil
}
