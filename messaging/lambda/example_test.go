package lambda_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func Example() {
	orders, _ := router.New("orders", func(ctx context.Context, msg middleware.Message) error {
		if string(msg.Body()) == "bad" {
			return errors.New("cannot process")
		}
		return nil
	})
	h, _ := lambda.New([]*router.Route{orders}, lambda.WithMiddleware(middleware.Recovery(nil)))
	// In main: awslambda.Start(h.Handle) from github.com/aws/aws-lambda-go/lambda.
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: "ok", EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders"},
		{MessageId: "2", Body: "bad", EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders"},
	}})
	fmt.Println(resp.BatchItemFailures)
	// Output: [{2}]
}
