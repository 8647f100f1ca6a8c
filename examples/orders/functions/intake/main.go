// Command intake is the orders deployment's message handler: the orders queue
// (subscribed to the orders topic) and the warehouse queue invoke it, and it
// starts one fulfilment run per order and signals runs the warehouse packed,
// reporting failed records in batchItemFailures.
package main

import (
	"context"
	"log/slog"
	"os"

	awslambda "github.com/aws/aws-lambda-go/lambda"

	"github.com/cairn-go/cairn/examples/orders/fulfil"
	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/router"
)

// Queue names of the deployment (deploy/main.tf): the routes match records
// by the queue name in their event source ARN.
func queueName(suffix string) string { return os.Getenv("ORDERS_NAME") + "-" + suffix }

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	d, err := fulfil.OpenAWS(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("intake: cannot open the deployment", "err", err)
		os.Exit(1)
	}
	onOrders, onWarehouse, err := fulfil.Handlers(d.Client, d.Workflow)
	if err != nil {
		log.Error("intake: handlers", "err", err)
		os.Exit(1)
	}
	orders, err := router.New(queueName("orders"), onOrders)
	if err != nil {
		log.Error("intake: route", "err", err)
		os.Exit(1)
	}
	warehouse, err := router.New(queueName("warehouse"), onWarehouse)
	if err != nil {
		log.Error("intake: route", "err", err)
		os.Exit(1)
	}
	h, err := lambda.New([]*router.Route{orders, warehouse}, lambda.WithLogger(log))
	if err != nil {
		log.Error("intake: handler", "err", err)
		os.Exit(1)
	}
	awslambda.Start(h.Handle)
}
