package workflowidem_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/memory"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowidem"
	"github.com/cairn-go/cairn/worlds/local"
)

// Ship books a courier once per step, however often the step runs.
type Ship struct{ m *idempotency.Manager }

func (s Ship) Run(ctx workflow.Context, parcel string) (string, error) {
	return workflow.Step(ctx, "book courier", func(sctx context.Context, parcel string) (string, error) {
		return workflowidem.Do(sctx, s.m, parcel, func(ctx context.Context, parcel string) (string, error) {
			return "booking for " + parcel, nil // the courier's API, which has no idempotency key
		})
	}, parcel)
}

// A manager for Do keys on the step and validates the call's input. Use the
// DynamoDB or Redis store in production; memory is for tests.
func ExampleDo() {
	m, err := idempotency.New(memory.New(), idempotency.Options{
		KeyPrefix: "courier", EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input",
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	world, _ := local.Open(ctx, local.Config{Path: local.Memory})
	defer world.Close()
	client, _ := workflow.NewClient(workflow.Config{World: world, PollInterval: 10 * time.Millisecond})
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Serve(sctx, workflow.Use(Ship{m: m})) }()
	defer func() { stop(); <-done }()
	run, _ := workflow.Start(ctx, client, Ship{m: m}, "parcel-7")
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: booking for parcel-7 <nil>
}
