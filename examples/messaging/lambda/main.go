// Command lambda serves routes from an AWS Lambda SQS event source. Enable
// ReportBatchItemFailures on the event source mapping so only the failed
// messages are retried.
package main

import (
	"context"
	"errors"
	"os"

	awslambda "github.com/aws/aws-lambda-go/lambda"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

type Order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

func main() {
	log := logger.New()
	orders, err := router.New(envOr("ORDERS_QUEUE", "orders"),
		typed.WrapHandler(typed.JSONCodec[Order]{}, func(ctx context.Context, o Order) error {
			if o.Total < 0 {
				return merrors.Fatal(errors.New("negative total")) // never retried usefully
			}
			return nil
		}),
		router.WithDLQ(5))
	if err != nil {
		log.Error("route", "error", err)
		os.Exit(1)
	}
	h, err := lambda.New([]*router.Route{orders}, lambda.WithLogger(log),
		lambda.WithMiddleware(middleware.Recovery(log), middleware.Logging(log)))
	if err != nil {
		log.Error("handler", "error", err)
		os.Exit(1)
	}
	awslambda.Start(h.Handle)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
