package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// Deadline waits for a hook payload or its timeout, whichever comes first.
type Deadline struct{}

type deadlineIn struct {
	Token   string
	Timeout time.Duration
}

func (Deadline) Run(ctx workflow.Context, in deadlineIn) (string, error) {
	hook, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: in.Token})
	if err != nil {
		return "", err
	}
	timer := workflow.NewTimer(ctx, in.Timeout)
	i, err := workflow.Select(ctx, hook, timer)
	if err != nil {
		return "", err
	}
	if i == 1 {
		if err := timer.Get(ctx); err != nil {
			return "", err
		}
		return "timeout", nil
	}
	v, err := hook.Receive(ctx)
	if err != nil {
		return "", err
	}
	if err := timer.Get(ctx); !errors.Is(err, workflow.ErrTimerCancelled) {
		return "", fmt.Errorf("the losing timer's Get = %v, want ErrTimerCancelled", err)
	}
	// A step after the race, so the run is delivered (and, without the cache,
	// replayed through the Select) again.
	return workflow.Step(ctx, "after", func(_ context.Context, s string) (string, error) { return "got " + s, nil }, v)
}

// queueLister is the memworld's view of its queued deliveries.
type queueLister interface{ Queued() []worlds.Delivery }

func testSelectHookBeforeTimeout(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Deadline{}))
	ctx := context.Background()
	token := "deadline-" + t.Name()
	run, err := workflow.Start(ctx, h.c, Deadline{}, deadlineIn{Token: token, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := w.GetWait(ctx, run.ID(), "wait_2"); return err == nil })
	waitForHook(t, w, token)
	if _, err := workflow.ResumeHook(ctx, h.c, token, "yes"); err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "got yes" {
		t.Fatalf("Result = %q, %v", out, err)
	}
	if wait, err := w.GetWait(ctx, run.ID(), "wait_2"); err != nil || wait.Status != worlds.WaitCompleted {
		t.Fatalf("the losing timer's wait = %+v, %v; want it completed", wait, err)
	}
	evs, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	cancelled := 0
	for _, ev := range evs {
		if ev.Type == worlds.EventWaitCompleted {
			if ev.CorrelationID != "wait_2" || ev.Reason != worlds.WaitCancelled {
				t.Fatalf("wait completion %+v, want wait_2 cancelled", ev)
			}
			cancelled++
		}
	}
	if cancelled != 1 {
		t.Fatalf("%d cancellations of wait_2 in the log, want 1", cancelled)
	}
	if q, ok := w.(queueLister); ok {
		for _, d := range q.Queued() {
			if d.ID == "wake-"+run.ID()+"-wait_2" {
				t.Fatalf("the cancelled timer's wake-up is still queued: %+v", d)
			}
		}
	}
}

func testSelectTimeout(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Deadline{}))
	run, err := workflow.Start(context.Background(), h.c, Deadline{}, deadlineIn{Token: "timeout-" + t.Name(), Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "timeout" {
		t.Fatalf("Result = %q, %v", out, err)
	}
}

// Race runs two steps in parallel and reports which one Select saw first.
type Race struct{}

func (Race) Run(ctx workflow.Context, slow time.Duration) (int, error) {
	nap := func(d time.Duration) func(context.Context, int) (int, error) {
		return func(ctx context.Context, v int) (int, error) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
			return v, nil
		}
	}
	a := workflow.Go(ctx, "slow", nap(slow), 0)
	b := workflow.Go(ctx, "fast", nap(0), 1)
	i, err := workflow.Select(ctx, a, b)
	if err != nil {
		return 0, err
	}
	// Both resolve; the winner's value is what it returned.
	va, erra := a.Get(ctx)
	vb, errb := b.Get(ctx)
	if err := errors.Join(erra, errb); err != nil || va != 0 || vb != 1 {
		return 0, fmt.Errorf("futures after Select: %d, %d, %v", va, vb, err)
	}
	return i, nil
}

// Select picks the future whose outcome came first in the log, on every replay.
func testSelectSteps(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Race{}))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, Race{}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	won, err := run.Result(resultCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	first := ""
	for _, ev := range evs {
		if ev.Type == worlds.EventStepCompleted && first == "" {
			first = ev.CorrelationID
		}
	}
	if want := []string{"step_1", "step_2"}[won]; first != want {
		t.Fatalf("Select picked future %d (%s), but %s completed first in the log", won, want, first)
	}
}

func TestSelectBadArguments(t *testing.T) {
	t.Parallel()
	h := serve(t, memworld.New(), workflow.Config{}, workflow.Use(SelectArgs{}))
	for _, n := range []int{0, 1} {
		run, err := workflow.Start(context.Background(), h.c, SelectArgs{}, n)
		if err != nil {
			t.Fatal(err)
		}
		_, err = run.Result(resultCtx(t))
		var re *workflow.RunError
		if !errors.As(err, &re) || re.Info.Message == "" {
			t.Fatalf("Select(%d) = %v, want a ConfigError", n, err)
		}
		if want := "Select futures"; !strings.Contains(re.Info.Message, want) {
			t.Fatalf("Select(%d) error %q does not name %q", n, re.Info.Message, want)
		}
	}
}

// SelectArgs calls Select with no future (0) or a nil one (1).
type SelectArgs struct{}

func (SelectArgs) Run(ctx workflow.Context, n int) (int, error) {
	if n == 0 {
		return workflow.Select(ctx)
	}
	var t *workflow.Timer
	return workflow.Select(ctx, workflow.NewTimer(ctx, time.Hour), nil, t)
}
