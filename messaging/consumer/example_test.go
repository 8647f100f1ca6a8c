package consumer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func Example() {
	sqsClient := messagingtest.NewSQS() // *sqs.Client in production
	url, _ := sqsClient.AddQueue("orders")
	_, _ = sqsClient.Send(url, "order-1", "", nil)

	done := make(chan struct{})
	route, err := router.New("orders", func(ctx context.Context, msg middleware.Message) error {
		fmt.Println("handled", string(msg.Body()))
		close(done)
		return nil // deleted in the next DeleteMessageBatch
	}, router.WithWorkerPoolSize(8), router.WithWaitTimeSeconds(1), router.WithDeleteBatch())
	if err != nil {
		panic(err)
	}
	c, err := consumer.New(sqsClient, route, consumer.WithShutdownTimeout(10*time.Second))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-done; cancel() }()
	if err := c.Run(ctx); err != nil {
		panic(err)
	}
	fmt.Println("left in queue:", sqsClient.Len(url))
	// Output:
	// handled order-1
	// left in queue: 0
}
