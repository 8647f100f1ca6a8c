package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

// Invoice bills one customer; a customer without an account fails.
type Invoice struct{}

func (Invoice) Run(ctx workflow.Context, customer string) (int, error) {
	if customer == "nobody" {
		return 0, errors.New("no account for " + customer)
	}
	return workflow.Step(ctx, "bill", func(context.Context, string) (int, error) { return 100, nil }, customer)
}

// MonthEnd bills every customer in a child run of its own, in parallel, and
// adds up what the children billed.
type MonthEnd struct{}

func (MonthEnd) Run(ctx workflow.Context, customers []string) (string, error) {
	var children []*workflow.ChildRun[int]
	for _, c := range customers {
		children = append(children, workflow.StartChild(ctx, Invoice{}, c))
	}
	total, failed := 0, 0
	for _, child := range children {
		n, err := child.Get(ctx)
		if errors.Is(err, workflow.ErrRunFailed) {
			failed++ // err is a *workflow.RunError naming the child run
			continue
		}
		if err != nil {
			return "", err
		}
		total += n
	}
	return fmt.Sprintf("billed %d, %d failed", total, failed), nil
}

// Poller checks something once per round and continues as new every 100
// rounds, so its history never holds more than 100 rounds, however long it
// runs.
type Poller struct{}

type pollState struct{ Round, Until int }

func (Poller) Run(ctx workflow.Context, s pollState) (int, error) {
	for i := 0; i < 100; i++ {
		if s.Round == s.Until {
			return s.Round, nil
		}
		if _, err := workflow.Step(ctx, "check", func(context.Context, int) (bool, error) { return true, nil }, s.Round); err != nil {
			return 0, err
		}
		s.Round++
	}
	return 0, workflow.ContinueAsNew(ctx, s)
}

func linkedClient() (*workflow.Client, func()) {
	world, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = client.Serve(ctx, workflow.Use(MonthEnd{}), workflow.Use(Invoice{}), workflow.Use(Poller{}))
	}()
	return client, func() { cancel(); <-done; _ = world.Close() }
}

func ExampleStartChild() {
	client, stop := linkedClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, MonthEnd{}, []string{"acme", "nobody", "globex"})
	if err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: billed 200, 1 failed <nil>
}

func ExampleContinueAsNew() {
	client, stop := linkedClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, Poller{}, pollState{Until: 250}, workflow.WithRunID("poller-1"))
	if err != nil {
		panic(err)
	}
	// Result follows the chain of runs to the last one.
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	first, _ := client.GetRun(ctx, run.ID())
	fmt.Println(first.Attributes[workflow.AttrContinuedAs])
	// Output:
	// 250 <nil>
	// poller-1-cont-1
}
