package broker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func Example() {
	sqsClient := messagingtest.NewSQS()
	url, _ := sqsClient.AddQueue("payments")
	_, _ = sqsClient.Send(url, "p-1", "", nil)

	done := make(chan struct{})
	payments, _ := router.New("payments", func(ctx context.Context, msg middleware.Message) error {
		fmt.Println("payment", string(msg.Body()))
		close(done)
		return nil
	}, router.WithWaitTimeSeconds(1))
	log := logger.NewNoOp()
	b, err := broker.New(sqsClient, []*router.Route{payments},
		broker.WithLogger(log),
		broker.WithMiddleware(middleware.Recovery(log)),
		broker.WithShutdownTimeout(30*time.Second))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-done; cancel() }()
	fmt.Println(b.Run(ctx))
	// Output:
	// payment p-1
	// <nil>
}
