package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// Compensating charges, waits for a shipment hook, and refunds under
// WithoutCancel when cancelled; a step it starts after the cancellation
// without WithoutCancel must not run.
type Compensating struct{ refunds, late *atomic.Int32 }

func (w Compensating) Run(ctx workflow.Context, token string) (string, error) {
	if _, err := workflow.Step(ctx, "charge", func(context.Context, string) (int, error) { return 10, nil }, token); err != nil {
		return "", err
	}
	hook, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	_, err = hook.Receive(ctx)
	if !errors.Is(err, workflow.ErrCancelled) {
		return "", fmt.Errorf("Receive after cancel = %v, want ErrCancelled", err)
	}
	var ce *workflow.CancelledError
	if !errors.As(err, &ce) || ce.Reason != "customer left" {
		return "", fmt.Errorf("cancellation %v does not carry the reason", err)
	}
	if _, lerr := workflow.Step(ctx, "late", func(context.Context, int) (int, error) { w.late.Add(1); return 0, nil }, 0); !errors.Is(lerr, workflow.ErrCancelled) {
		return "", fmt.Errorf("a step started after the cancellation = %v, want ErrCancelled", lerr)
	}
	if serr := workflow.Sleep(ctx, time.Hour); !errors.Is(serr, workflow.ErrCancelled) {
		return "", fmt.Errorf("a sleep after the cancellation = %v, want ErrCancelled", serr)
	}
	cleanup := workflow.WithoutCancel(ctx)
	if _, rerr := workflow.Step(cleanup, "refund", func(context.Context, int) (int, error) { w.refunds.Add(1); return 10, nil }, 10); rerr != nil {
		return "", rerr
	}
	if serr := workflow.Sleep(cleanup, time.Millisecond); serr != nil {
		return "", serr
	}
	return "", err
}

func testCancelIntoCode(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	wf := Compensating{refunds: new(atomic.Int32), late: new(atomic.Int32)}
	h := serve(t, w, workflow.Config{}, workflow.Use(wf))
	ctx := context.Background()
	token := "compensate-" + t.Name()
	run, err := workflow.Start(ctx, h.c, wf, token)
	if err != nil {
		t.Fatal(err)
	}
	waitForHook(t, w, token)
	if err := run.Cancel(ctx, "customer left"); err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !errors.Is(err, workflow.ErrRunCancelled) || re.Info.Message != "customer left" {
		t.Fatalf("Result err = %v, want the run cancelled with the reason", err)
	}
	if n := wf.refunds.Load(); n != 1 {
		t.Fatalf("refund ran %d times, want once", n)
	}
	if n := wf.late.Load(); n != 0 {
		t.Fatalf("a step started after the cancellation ran %d times", n)
	}
	steps, err := w.ListSteps(ctx, run.ID(), worlds.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, s := range steps.Items {
		names = append(names, s.StepName+":"+string(s.Status))
	}
	if fmt.Sprint(names) != "[charge:completed refund:completed]" {
		t.Fatalf("steps = %v, want the charge and the refund only", names)
	}
}

// Blocking runs a step that waits for its context to end and reports why.
type Blocking struct{ running, cause chan error }

func (w Blocking) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "wait", func(sctx context.Context, _ int) (int, error) {
		w.running <- nil
		<-sctx.Done()
		w.cause <- context.Cause(sctx)
		return 0, sctx.Err()
	}, 0, workflow.WithMaxAttempts(1))
}

// A cancel sent from the process running a step cancels the step's context.
func testCancelRunningStep(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	wf := Blocking{running: make(chan error, 4), cause: make(chan error, 4)}
	h := serve(t, w, workflow.Config{}, workflow.Use(wf))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, wf, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-wf.running
	if err := run.Cancel(ctx, "stop"); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-wf.cause:
		var ce *workflow.CancelledError
		if !errors.As(cause, &ce) || ce.RunID != run.ID() {
			t.Fatalf("the step's context ended with %v, want the run's CancelledError", cause)
		}
	case <-resultCtx(t).Done():
		t.Fatal("the running step's context was not cancelled")
	}
	if _, err := run.Result(resultCtx(t)); !errors.Is(err, workflow.ErrRunCancelled) {
		t.Fatalf("Result = %v, want cancelled", err)
	}
}

// ContinueOnce continues as new once, then returns its input.
type ContinueOnce struct{}

func (ContinueOnce) Run(ctx workflow.Context, n int) (int, error) {
	if n > 0 {
		return n, nil
	}
	return 0, workflow.ContinueAsNew(ctx, 1)
}

// endFailWorld fails the first append that would end runID.
type endFailWorld struct {
	worlds.World
	runID  string
	failed atomic.Bool
}

func (f *endFailWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	for _, ev := range events {
		if runID == f.runID && ev.Type == worlds.EventRunCompleted && f.failed.CompareAndSwap(false, true) {
			return nil, errors.New("injected: the end was not written")
		}
	}
	return f.World.Append(ctx, runID, events...)
}

// A run cancelled after a delivery created its continuation but failed to end
// it ends cancelled on the redelivery, and takes the continuation with it
// rather than leaving it pending for ever.
func TestCancelAfterContinuationCreated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := memworld.New()
	c, err := workflow.NewClient(workflow.Config{World: w, Cache: workflow.CacheConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := workflow.Start(ctx, c, ContinueOnce{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	fw := &endFailWorld{World: w, runID: run.ID()}
	r := worldRunner{inner: c.Runner(workflow.Use(ContinueOnce{})), world: fw}
	w.RunOne(ctx, r)
	if got, err := w.GetRun(ctx, run.ID()); err != nil || got.Status.Terminal() {
		t.Fatalf("run after the failed end = %+v, %v; want it still running", got, err)
	}
	next := run.ID() + "-cont-1"
	if got, err := w.GetRun(ctx, next); err != nil || got.Status != worlds.RunPending {
		t.Fatalf("continuation = %+v, %v; want it created and pending", got, err)
	}
	if err := c.Cancel(ctx, run.ID(), "stop"); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		w.RunOne(ctx, r)
	}
	for _, id := range []string{run.ID(), next} {
		if got, err := w.GetRun(ctx, id); err != nil || got.Status != worlds.RunCancelled {
			t.Fatalf("run %s = %+v, %v; want cancelled", id, got, err)
		}
	}
}
