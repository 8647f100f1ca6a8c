// Package fulfil is the order workflow of examples/orders and the message
// handlers that drive it, shared by the local program, its end-to-end test
// and the Lambda functions of its deployment.
//
// An "order placed" message (SNS topic, then SQS queue) starts one run per
// order ID, however often it is delivered. The run reserves the items,
// charges the card once per order through the idempotency store, waits up to
// 48 hours for the warehouse's "packed" message (a signal), ships, and
// publishes "order shipped" to an SNS topic with a deduplication ID from the
// run and step.
package fulfil

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowidem"
	"github.com/cairn-go/cairn/workflow/workflowmsg"
)

// Order is the body of an "order placed" message.
type Order struct {
	ID    string   `json:"orderId"`
	Items []string `json:"items"`
	Cents int      `json:"cents"`
}

// Packed is the body of a warehouse "packed" message.
type Packed struct {
	OrderID string `json:"orderId"`
	Parcel  string `json:"parcel"`
}

// Shipped is the body of the "order shipped" notification.
type Shipped struct {
	OrderID string `json:"orderId"`
	Charge  string `json:"charge"`
	Parcel  string `json:"parcel"`
}

// Inventory reserves and releases items.
type Inventory interface {
	Reserve(ctx context.Context, orderID string, items []string) error
	Release(ctx context.Context, orderID string) error
}

// Payments charges a card and returns the charge ID; it takes no idempotency
// key, so the workflow charges through the idempotency store.
type Payments interface {
	Charge(ctx context.Context, orderID string, cents int) (string, error)
}

// PackTimeout is how long an order waits for the warehouse.
const PackTimeout = 48 * time.Hour

// Names shared by the workflow, the handlers and the deployment.
const (
	RunPrefix    = "order-" // run ID of order X: "order-X"
	PackedSignal = "packed"
)

// Workflow fulfils one order. Its fields are its dependencies; the workflow's
// name is "fulfil.Workflow" whatever they hold.
type Workflow struct {
	Inventory    Inventory
	Payments     Payments
	Charges      *idempotency.Manager // keyed on "stepKey" (see workflowidem)
	Publisher    workflowmsg.Publisher
	ShippedTopic string
}

// ErrNotPacked ends a run the warehouse did not pack in time.
var ErrNotPacked = errors.New("fulfil: the warehouse did not pack the order in time")

// Run fulfils o.
func (w Workflow) Run(ctx workflow.Context, o Order) (Shipped, error) {
	// The signal channel exists from the start: a "packed" message that
	// arrives early waits in the run's log.
	packed := workflow.NewSignalChannel[Packed](ctx, PackedSignal)
	if _, err := workflow.Step(ctx, "reserve", func(sctx context.Context, o Order) (bool, error) {
		return true, w.Inventory.Reserve(sctx, o.ID, o.Items)
	}, o); err != nil {
		return Shipped{}, err
	}
	charge, err := workflow.Step(ctx, "charge", func(sctx context.Context, o Order) (string, error) {
		return workflowidem.Do(sctx, w.Charges, o, func(ctx context.Context, o Order) (string, error) {
			return w.Payments.Charge(ctx, o.ID, o.Cents)
		})
	}, o)
	if err != nil {
		return Shipped{}, err
	}
	// A timer the World refuses (the AWS World needs EventBridge Scheduler
	// beyond 15 minutes) is Select's error, not a timeout.
	i, err := workflow.Select(ctx, packed, workflow.NewTimer(ctx, PackTimeout))
	if err != nil {
		return Shipped{}, err
	}
	if i == 1 {
		if _, err := workflow.Step(ctx, "release", func(sctx context.Context, id string) (bool, error) {
			return true, w.Inventory.Release(sctx, id)
		}, o.ID); err != nil {
			return Shipped{}, err
		}
		return Shipped{}, workflow.Fatal(ErrNotPacked)
	}
	p, err := packed.Receive(ctx)
	if err != nil {
		return Shipped{}, err
	}
	out := Shipped{OrderID: o.ID, Charge: charge, Parcel: p.Parcel}
	if _, err := workflowmsg.Publish(ctx, w.Publisher, "publish shipped", workflowmsg.Message{
		TopicARN: w.ShippedTopic, Body: out, GroupID: o.ID,
	}); err != nil {
		return Shipped{}, err
	}
	return out, nil
}

// Handlers returns the handler of the orders queue (one run per order ID)
// and that of the warehouse queue (a "packed" signal to the order's run).
func Handlers(c *workflow.Client, w Workflow) (orders, warehouse middleware.Handler, err error) {
	byOrder, err := workflowmsg.KeyBodyField("orderId")
	if err != nil {
		return nil, nil, err
	}
	orders, err = workflowmsg.StartHandler(c, w, workflowmsg.StartConfig[Order]{Key: byOrder, Prefix: RunPrefix})
	if err != nil {
		return nil, nil, err
	}
	warehouse, err = workflowmsg.SignalHandler(c, workflowmsg.SignalConfig{Key: byOrder, Prefix: RunPrefix, Name: PackedSignal})
	if err != nil {
		return nil, nil, err
	}
	return orders, warehouse, nil
}

// RunID is the run ID of order id.
func RunID(id string) string { return workflowmsg.RunID(RunPrefix, id) }

// MemoryInventory is an Inventory in memory, for the local program and tests.
type MemoryInventory struct {
	mu       sync.Mutex
	reserved map[string][]string
}

// Reserve records the items of orderID.
func (m *MemoryInventory) Reserve(_ context.Context, orderID string, items []string) error {
	if len(items) == 0 {
		return workflow.Fatal(fmt.Errorf("order %s has no items", orderID))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reserved == nil {
		m.reserved = map[string][]string{}
	}
	m.reserved[orderID] = items
	return nil
}

// Release forgets the items of orderID.
func (m *MemoryInventory) Release(_ context.Context, orderID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reserved, orderID)
	return nil
}

// Reserved returns the items reserved for orderID.
func (m *MemoryInventory) Reserved(orderID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserved[orderID]
}

// CountingPayments is a Payments that charges nothing and counts its calls
// by order, for the local program and tests.
type CountingPayments struct {
	mu    sync.Mutex
	calls map[string]int
}

// Charge returns a charge ID naming the order and the call's number.
func (p *CountingPayments) Charge(_ context.Context, orderID string, cents int) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[orderID]++
	return fmt.Sprintf("ch_%s_%d_%d", orderID, cents, p.calls[orderID]), nil
}

// Calls returns how often orderID was charged.
func (p *CountingPayments) Calls(orderID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[orderID]
}
