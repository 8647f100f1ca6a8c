// Command orders runs examples/orders on one machine: the embedded World,
// the in-memory SQS and SNS of messaging/messagingtest, and a broker
// consuming the orders and warehouse queues. It places two orders (one of them
// published twice, as a producer's retry would), has the warehouse pack both,
// and prints each run's outcome and the "order shipped" notifications.
//
//	go run ./examples/orders
//
// deploy/ holds the same wiring on AWS: an SNS topic and SQS queues, the AWS
// World, and Lambda functions (functions/worker, functions/intake).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/cairn-go/cairn/examples/orders/fulfil"
	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/memory"
	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

const (
	ordersTopic  = "arn:aws:sns:us-east-1:000000000000:orders"
	shippedTopic = "arn:aws:sns:us-east-1:000000000000:order-shipped.fifo"
)

func main() {
	dir, err := os.MkdirTemp("", "cairn-orders-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, filepath.Join(dir, "orders.db"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run places the orders and reports their outcome to out.
func run(ctx context.Context, dbPath string, out io.Writer) error {
	world, err := local.Open(ctx, local.Config{Path: dbPath})
	if err != nil {
		return err
	}
	defer world.Close()

	sqsFake := messagingtest.NewSQS()
	ordersURL, _ := sqsFake.AddQueue("orders")
	warehouseURL, _ := sqsFake.AddQueue("warehouse")
	shippedURL, _ := sqsFake.AddQueue("order-shipped.fifo")
	sqsFake.SetContentBasedDeduplication(shippedURL, false)
	snsFake := messagingtest.NewSNS(sqsFake)
	snsFake.SubscribeEnvelope(ordersTopic, ordersURL)
	snsFake.Subscribe(shippedTopic, shippedURL)
	pub, err := producer.New(snsFake)
	if err != nil {
		return err
	}

	charges, err := idempotency.New(memory.New(), idempotency.Options{
		KeyPrefix: "orders-charge", EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input",
	})
	if err != nil {
		return err
	}
	payments := &fulfil.CountingPayments{}
	wf := fulfil.Workflow{Inventory: &fulfil.MemoryInventory{}, Payments: payments, Charges: charges, Publisher: pub, ShippedTopic: shippedTopic}
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	onOrders, onWarehouse, err := fulfil.Handlers(client, wf)
	if err != nil {
		return err
	}
	ordersRoute, err := router.New("orders", onOrders, router.WithWaitTimeSeconds(1))
	if err != nil {
		return err
	}
	warehouseRoute, err := router.New("warehouse", onWarehouse, router.WithWaitTimeSeconds(1), router.WithVisibilityTimeout(2))
	if err != nil {
		return err
	}
	b, err := broker.New(sqsFake, []*router.Route{ordersRoute, warehouseRoute}, broker.WithLogger(logger.NewNoOp()))
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 2)
	go func() { served <- client.Serve(sctx, workflow.Use(wf)) }()
	go func() { served <- b.Run(sctx) }()

	orders := []fulfil.Order{{ID: "A-100", Items: []string{"kettle"}, Cents: 3900}, {ID: "B-200", Items: []string{"mug", "tea"}, Cents: 1250}}
	for _, o := range append(orders, orders[0]) { // A-100 published twice
		body, _ := json.Marshal(o)
		if _, err := pub.Publish(ctx, &producer.PublishInput{TopicARN: ordersTopic, Message: string(body)}); err != nil {
			return err
		}
	}
	for _, o := range orders {
		// The broker starts the run when it receives the order.
		for _, err := client.GetRun(ctx, fulfil.RunID(o.ID)); errors.Is(err, worlds.ErrRunNotFound); _, err = client.GetRun(ctx, fulfil.RunID(o.ID)) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		// The warehouse packs it. A "packed" message that came before the run
		// existed would be retried after the queue's visibility timeout.
		body, _ := json.Marshal(fulfil.Packed{OrderID: o.ID, Parcel: "parcel-" + o.ID})
		if _, err := sqsFake.Send(warehouseURL, string(body), "", nil); err != nil {
			return err
		}
		shipped, err := workflow.Attach[fulfil.Shipped](client, fulfil.RunID(o.ID)).Result(ctx)
		if err != nil {
			return fmt.Errorf("order %s: %w", o.ID, err)
		}
		fmt.Fprintf(out, "order %s shipped as %s, charged %d time(s): %s\n", o.ID, shipped.Parcel, payments.Calls(o.ID), shipped.Charge)
	}
	fmt.Fprintf(out, "%d \"order shipped\" notifications\n", len(sqsFake.Bodies(shippedURL)))
	stop()
	for range 2 {
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}
