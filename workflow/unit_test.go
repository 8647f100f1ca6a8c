package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	p := workflow.RetryPolicy{MaxAttempts: 10, InitialInterval: time.Second, MaxInterval: 5 * time.Second, Multiplier: 2}
	cases := []struct {
		attempt int
		want    time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 5 * time.Second}, {9, 5 * time.Second}}
	for _, tc := range cases {
		if got := p.Backoff(tc.attempt); got != tc.want {
			t.Errorf("Backoff(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
	if got := workflow.DefaultRetryPolicy; got.MaxAttempts != 3 {
		t.Errorf("default attempts = %d, want 3", got.MaxAttempts)
	}
}

func TestFatal(t *testing.T) {
	t.Parallel()
	base := errors.New("card declined")
	err := workflow.Fatal(base)
	if !workflow.IsFatal(err) || !errors.Is(err, base) || workflow.IsFatal(base) || workflow.Fatal(nil) != nil {
		t.Fatalf("Fatal/IsFatal misbehave: %v", err)
	}
}

// Dice draws random numbers and reads the clock around a step, returning what it saw.
type Dice struct{ stale *workflow.Context }

type diceOut struct {
	Before, After float64
	Seen          float64
	T1, T2        time.Time
}

func (w Dice) Run(ctx workflow.Context, _ int) (diceOut, error) {
	*w.stale = ctx
	var o diceOut
	o.Before, o.T1 = workflow.Random(ctx), workflow.Now(ctx)
	seen, err := workflow.Step(ctx, "echo", func(_ context.Context, f float64) (float64, error) { return f, nil }, o.Before)
	if err != nil {
		return o, err
	}
	o.Seen, o.After, o.T2 = seen, workflow.Random(ctx), workflow.Now(ctx)
	return o, nil
}

func TestRandomAndNowAreReplayed(t *testing.T) {
	t.Parallel()
	var stale workflow.Context
	wf := Dice{stale: &stale}
	w := memworld.New()
	h := serve(t, w, workflow.Config{}, workflow.Use(wf))
	run, err := workflow.Start(context.Background(), h.c, wf, 0)
	if err != nil {
		t.Fatal(err)
	}
	o, err := run.Result(resultCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	// The step ran in the first delivery with Before; the result was read in a later
	// replay, which must have drawn the same Before.
	if o.Seen != o.Before || o.Before == o.After {
		t.Fatalf("random values not replayed: %+v", o)
	}
	step, err := w.GetStep(context.Background(), run.ID(), "step_1")
	if err != nil {
		t.Fatal(err)
	}
	var recorded float64
	_ = json.Unmarshal(step.Input, &recorded)
	if recorded != o.Before {
		t.Fatalf("recorded step input %v, replayed value %v", recorded, o.Before)
	}
	if o.T1.IsZero() || !o.T2.After(o.T1) {
		t.Fatalf("workflow clock did not advance with the log: %s -> %s", o.T1, o.T2)
	}
	// A workflow Context used after its execution ended is refused.
	_, err = workflow.Step(stale, "late", func(context.Context, int) (int, error) { return 0, nil }, 0)
	if !errors.Is(err, workflow.ErrNotInWorkflow) {
		t.Fatalf("step on a stale context: err = %v", err)
	}
	if err := workflow.Sleep(stale, time.Second); !errors.Is(err, workflow.ErrNotInWorkflow) {
		t.Fatalf("sleep on a stale context: err = %v", err)
	}
	if _, err := workflow.Step[int, int](nil, "nil", nil, 0); !errors.Is(err, workflow.ErrNotInWorkflow) {
		t.Fatalf("step on nil context: err = %v", err)
	}
}

func TestInfoFrom(t *testing.T) {
	t.Parallel()
	if _, ok := workflow.InfoFrom(context.Background()); ok {
		t.Fatal("InfoFrom found identity on a plain context")
	}
	got := make(chan workflow.Info, 2)
	wf := InfoFlow{got: got}
	h := serve(t, memworld.New(), workflow.Config{}, workflow.Use(wf))
	run, err := workflow.Start(context.Background(), h.c, wf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(resultCtx(t)); err != nil {
		t.Fatal(err)
	}
	step := <-got
	if step.RunID != run.ID() || step.WorkflowName != "workflow_test.InfoFlow" || step.StepID != "step_1" || step.StepName != "who" || step.Attempt != 1 || step.Replaying {
		t.Fatalf("step info = %+v", step)
	}
}

// InfoFlow reports its step's identity.
type InfoFlow struct{ got chan workflow.Info }

func (w InfoFlow) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "who", func(sctx context.Context, _ int) (int, error) {
		info, _ := workflow.InfoFrom(sctx)
		w.got <- info
		return 0, nil
	}, 0)
}

// Slow has a step that outlives its timeout.
type Slow struct{}

func (Slow) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "slow", func(sctx context.Context, _ int) (int, error) {
		<-sctx.Done()
		return 0, sctx.Err()
	}, 0, workflow.WithTimeout(20*time.Millisecond), workflow.WithMaxAttempts(1))
}

func TestStepTimeout(t *testing.T) {
	t.Parallel()
	h := serve(t, memworld.New(), workflow.Config{}, workflow.Use(Slow{}))
	run, err := workflow.Start(context.Background(), h.c, Slow{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !strings.Contains(re.Info.Message, "deadline exceeded") {
		t.Fatalf("err = %v, want the attempt's deadline in the failure", err)
	}
}

func TestBadStepOptions(t *testing.T) {
	t.Parallel()
	h := serve(t, memworld.New(), workflow.Config{}, workflow.Use(BadOpts{}))
	run, err := workflow.Start(context.Background(), h.c, BadOpts{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !strings.Contains(re.Info.Message, "RetryPolicy.MaxAttempts") {
		t.Fatalf("err = %v, want the bad field named", err)
	}
}

// BadOpts asks for a negative number of attempts.
type BadOpts struct{}

func (BadOpts) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "x", func(context.Context, int) (int, error) { return 0, nil }, 0, workflow.WithMaxAttempts(-1))
}
