package workflow_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// Shipment tags its run with the customer and its stage, and answers the
// "stage" query while it waits for the carrier.
type Shipment struct{}

func (Shipment) Run(ctx workflow.Context, customer string) (string, error) {
	stage := "booking"
	if err := workflow.SetQueryHandler(ctx, "stage", func(struct{}) (string, error) { return stage, nil }); err != nil {
		return "", err
	}
	if err := workflow.UpsertAttributes(ctx, map[string]string{"customer": customer, "stage": "booking"}); err != nil {
		return "", err
	}
	pickup, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: "pickup-" + customer})
	if err != nil {
		return "", err
	}
	stage = "waiting for the carrier"
	if err := workflow.UpsertAttributes(ctx, map[string]string{"stage": "awaiting-pickup"}); err != nil {
		return "", err
	}
	carrier, err := pickup.Receive(ctx)
	if err != nil {
		return "", err
	}
	return "picked up by " + carrier, workflow.UpsertAttributes(ctx, map[string]string{"stage": "shipped"})
}

// A run's stage, read with a query while it waits, and found by its search
// attributes.
func ExampleQuery() {
	ctx := context.Background()
	world, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Serve(sctx, workflow.Use(Shipment{})) }()
	defer func() { stop(); <-done }()

	run, err := workflow.Start(ctx, client, Shipment{}, "c7")
	if err != nil {
		panic(err)
	}
	waitHook(client, "pickup-c7")
	stage, err := workflow.Query[string](ctx, client, run.ID(), "stage", nil)
	fmt.Println(stage, err)
	for {
		// The attributes are written with the hook; find the run by them.
		page, err := world.ListRuns(ctx, worlds.RunFilter{Attributes: map[string]string{"customer": "c7", "stage": "awaiting-pickup"}})
		if err != nil {
			panic(err)
		}
		if len(page.Items) == 1 {
			fmt.Println("waiting:", page.Items[0].RunID == run.ID())
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := workflow.ResumeHook(ctx, client, "pickup-c7", "Dana"); err != nil {
		panic(err)
	}
	fmt.Println(run.Result(ctx))
	r, _ := client.GetRun(ctx, run.ID())
	fmt.Println(r.Attributes["stage"])
	// Output:
	// waiting for the carrier <nil>
	// waiting: true
	// picked up by Dana <nil>
	// shipped
}
