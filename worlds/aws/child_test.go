package awsworld_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Parent starts a Nap child, then runs a Chain child and a Failer child one
// after the other, and returns the sum of the Chain's and the Nap's outputs.
type Parent struct{}

func (Parent) Run(ctx workflow.Context, n int) (int, error) {
	nap := workflow.StartChild(ctx, Nap{}, n)
	v, err := workflow.StartChild(ctx, Chain{}, n).Get(ctx)
	if err != nil {
		return 0, err
	}
	var re *workflow.RunError
	if _, err := workflow.StartChild(ctx, Failer{}, n).Get(ctx); !errors.As(err, &re) || !errors.Is(err, workflow.ErrRunFailed) || re.Info.Message != "no" {
		return 0, fmt.Errorf("failing child: %v", err)
	}
	w, err := nap.Get(ctx)
	return v + w, err
}

// Failer fails.
type Failer struct{}

func (Failer) Run(workflow.Context, int) (int, error) { return 0, errors.New("no") }

// Counter continues as new after every step until it reaches 3.
type Counter struct{}

func (Counter) Run(ctx workflow.Context, n int) (int, error) {
	n, err := workflow.Step(ctx, "inc", func(_ context.Context, v int) (int, error) { return v + 1, nil }, n)
	if err != nil || n >= 3 {
		return n, err
	}
	return 0, workflow.ContinueAsNew(ctx, n)
}

// Child runs and continue-as-new chains on this World, through the Lambda
// handler: the child's end is recorded in its parent's table partition and wakes
// the parent; cancelling the parent cancels its sleeping child and deletes the
// child's wake-up schedule.
func TestWorkflowChildrenAndContinueAsNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client, err := workflow.NewClient(workflow.Config{World: e.w, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.FlushCache)
	ctx := context.Background()
	handler := awsworld.Queue(e.w, client.Runner(worlds.Runners(workflow.Use(Parent{}), workflow.Use(Chain{}),
		workflow.Use(Nap{}), workflow.Use(Counter{}), workflow.Use(Failer{}))))
	queues := map[string]string{e.arn: e.url}

	counter, err := workflow.Start(ctx, client, Counter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := counter.ID() + "-cont-2"
	drain(t, e, handler, queues, runDone(t, e.w, last))
	if out, err := counter.Result(ctx); err != nil || out != 3 {
		t.Fatalf("counter = %d, %v", out, err)
	}
	if r, err := e.w.GetRun(ctx, counter.ID()); err != nil || r.Attributes[workflow.AttrContinuedAs] != counter.ID()+"-cont-1" {
		t.Fatalf("first run = %+v, %v", r, err)
	}

	parent, err := workflow.Start(ctx, client, Parent{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	nap := workflow.ChildRunID(parent.ID(), "step_1")
	drain(t, e, handler, queues, func() bool {
		r, err := e.w.GetRun(ctx, nap)
		return err == nil && r.Status == worlds.RunRunning && len(e.sched.Schedules()) == 1
	})
	drain(t, e, handler, queues, func() bool {
		r, _ := e.w.GetRun(ctx, workflow.ChildRunID(parent.ID(), "step_3"))
		return r.Status == worlds.RunFailed
	})
	if err := parent.Cancel(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	// The parent's code sees the cancellation and ends; its end asks the child
	// to stop, whose code does the same.
	drain(t, e, handler, queues, func() bool {
		r, err := e.w.GetRun(ctx, nap)
		return err == nil && r.Status.Terminal()
	})
	if r, err := e.w.GetRun(ctx, nap); err != nil || r.Status != worlds.RunCancelled || r.Attributes[workflow.AttrParent] != parent.ID() {
		t.Fatalf("nap child after the parent's cancel = %+v, %v", r, err)
	}
	drain(t, e, handler, queues, func() bool { return len(e.sched.Schedules()) == 0 })

	whole, err := workflow.Start(ctx, client, Parent{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	// The cancelled Nap's schedule is gone, so the one schedule left is the new
	// parent's Nap asleep.
	drain(t, e, handler, queues, func() bool {
		r, err := e.w.GetRun(ctx, workflow.ChildRunID(whole.ID(), "step_1"))
		return err == nil && r.Status == worlds.RunRunning && len(e.sched.Schedules()) == 1
	})
	e.advance(t, 3*time.Hour)
	drain(t, e, handler, queues, runDone(t, e.w, whole.ID()))
	if out, err := whole.Result(ctx); err != nil || out != 5+benchSteps+10 {
		t.Fatalf("parent = %d, %v", out, err)
	}
}
