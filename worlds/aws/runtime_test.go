package awsworld_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Nap sleeps past SQS's 15-minute limit, so its wake-up goes through Scheduler.
type Nap struct{}

func (Nap) Run(ctx workflow.Context, in int) (int, error) {
	if err := workflow.Sleep(ctx, 2*time.Hour); err != nil {
		return 0, err
	}
	return workflow.Step(ctx, "double", func(_ context.Context, v int) (int, error) { return 2 * v, nil }, in)
}

// The workflow runtime on this World, driven through the Lambda handler with real
// SQS batches: a chain of steps, and a two-hour sleep woken by the Scheduler fake.
func TestWorkflowRuntimeEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client, err := workflow.NewClient(workflow.Config{World: e.w, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// client.Runner gives the runners the client's clock.
	handler := awsworld.Queue(e.w, client.Runner(worlds.Runners(workflow.Use(Chain{}), workflow.Use(Nap{}))))
	queues := map[string]string{e.arn: e.url}

	chain, err := workflow.Start(ctx, client, Chain{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, e, handler, queues, runDone(t, e.w, chain.ID()))
	if out, err := chain.Result(ctx); err != nil || out != 10+benchSteps {
		t.Fatalf("chain = %d, %v", out, err)
	}

	nap, err := workflow.Start(ctx, client, Nap{}, 21)
	if err != nil {
		t.Fatal(err)
	}
	// Run until the sleep is recorded and its wake-up scheduled.
	drain(t, e, handler, queues, func() bool { return len(e.sched.Schedules()) == 1 })
	if r, _ := e.w.GetRun(ctx, nap.ID()); r.Status != worlds.RunRunning {
		t.Fatalf("napping run is %s", r.Status)
	}
	e.advance(t, 2*time.Hour+time.Minute)
	drain(t, e, handler, queues, runDone(t, e.w, nap.ID()))
	if out, err := nap.Result(ctx); err != nil || out != 42 {
		t.Fatalf("nap = %d, %v", out, err)
	}
}
