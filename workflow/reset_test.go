package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// Deploy runs four steps; the fourth fails while the deployed code is broken,
// as a bad deploy would. Its output says whether the random number drawn before
// the first step is the one the first step was given, which a reset run replays.
type Deploy struct {
	c      *counter
	broken *atomic.Bool
}

type deployOut struct {
	Sum        int
	SameRandom bool
}

func (w Deploy) Run(ctx workflow.Context, in int) (deployOut, error) {
	r := workflow.Random(ctx)
	seen, err := workflow.Step(ctx, "s1", func(_ context.Context, r float64) (float64, error) {
		w.c.inc("s1")
		return r, nil
	}, r)
	if err != nil {
		return deployOut{}, err
	}
	n := in
	for _, name := range []string{"s2", "s3", "s4"} {
		n, err = workflow.Step(ctx, name, func(_ context.Context, x int) (int, error) {
			w.c.inc(name)
			if name == "s4" && w.broken.Load() {
				return 0, workflow.Fatal(errors.New("s4: nil pointer in the new release"))
			}
			return x + 1, nil
		}, n)
		if err != nil {
			return deployOut{}, err
		}
	}
	return deployOut{Sum: n, SameRandom: seen == r}, nil
}

// A run failed by a bad deploy after three steps is reset to its last step:
// with the fix deployed, the new run completes, steps 1-3 are replayed from the
// copied history and not run again, and workflow.Random draws what it drew.
func TestResetLastStepAfterBadDeploy(t *testing.T) {
	t.Parallel()
	for _, w := range testWorlds {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			c := &counter{}
			broken := &atomic.Bool{}
			broken.Store(true)
			wf := Deploy{c: c, broken: broken}
			h := serve(t, w.open(t), workflow.Config{}, workflow.Use(wf))
			ctx := resultCtx(t)
			run, err := workflow.Start(ctx, h.c, wf, 10)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := run.Result(ctx); err == nil {
				t.Fatal("the broken deploy's run did not fail")
			}
			broken.Store(false) // the fix is deployed

			got, err := h.c.Reset(ctx, run.ID(), workflow.ResetToLastStep(), workflow.WithResetRunID(run.ID()+"-reset"))
			if err != nil {
				t.Fatal(err)
			}
			if got.RunID != run.ID()+"-reset" || got.Attributes[worlds.AttrResetFrom] != run.ID() {
				t.Fatalf("new run %s, attributes %v", got.RunID, got.Attributes)
			}
			out, err := workflow.Attach[deployOut](h.c, got.RunID).Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if out != (deployOut{Sum: 13, SameRandom: true}) {
				t.Fatalf("output %+v, want {13 true}", out)
			}
			for step, want := range map[string]int{"s1": 1, "s2": 1, "s3": 1, "s4": 2} {
				if n := c.get(step); n != want {
					t.Errorf("%s ran %d times, want %d", step, n, want)
				}
			}
			old, err := h.c.GetRun(ctx, run.ID())
			if err != nil || old.Status != worlds.RunFailed {
				t.Fatalf("old run %s, %v; want it left failed", old.Status, err)
			}
			// A retried reset with the same new run ID returns that run.
			again, err := h.c.Reset(ctx, run.ID(), workflow.ResetToLastStep(), workflow.WithResetRunID(got.RunID))
			if err != nil || again.RunID != got.RunID || again.Status != worlds.RunCompleted {
				t.Fatalf("reset again: %s %s, %v", again.RunID, again.Status, err)
			}
		})
	}
}

// ResetApproval runs two steps, then waits for a hook and runs a third with it.
type ResetApproval struct{ c *counter }

func (w ResetApproval) Run(ctx workflow.Context, in string) (string, error) {
	s := in
	for _, name := range []string{"a1", "a2"} {
		var err error
		if s, err = workflow.Step(ctx, name, func(_ context.Context, x string) (string, error) {
			w.c.inc(name)
			return x + "+" + name, nil
		}, s); err != nil {
			return "", err
		}
	}
	hk, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: "approve-" + in})
	if err != nil {
		return "", err
	}
	who, err := hk.Receive(ctx)
	if err != nil {
		return "", err
	}
	return workflow.Step(ctx, "a3", func(_ context.Context, x string) (string, error) {
		w.c.inc("a3")
		return x + "+" + who, nil
	}, s)
}

// A live run reset at its newest event ends cancelled with a link to the new
// run, whose copy owns the hook's token: the payload sent to it afterwards
// reaches the new run, which completes without running its first steps again.
func TestResetLiveRunMovesHook(t *testing.T) {
	t.Parallel()
	for _, w := range testWorlds {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			c := &counter{}
			wf := ResetApproval{c: c}
			h := serve(t, w.open(t), workflow.Config{}, workflow.Use(wf))
			ctx := resultCtx(t)
			token := "approve-" + w.name + t.Name()
			run, err := workflow.Start(ctx, h.c, wf, w.name+t.Name())
			if err != nil {
				t.Fatal(err)
			}
			var hook worlds.Hook
			for {
				if hook, err = h.w.GetHookByToken(ctx, token); err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("the hook was never created")
				}
				time.Sleep(5 * time.Millisecond)
			}
			cur, err := h.c.GetRun(ctx, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.c.Reset(ctx, run.ID(), workflow.ResetToEvent(cur.EventCount), workflow.WithResetReason("moved to the fixed release"))
			if err != nil {
				t.Fatal(err)
			}
			old, err := h.c.GetRun(ctx, run.ID())
			if err != nil || old.Status != worlds.RunCancelled || old.Attributes[worlds.AttrResetTo] != got.RunID {
				t.Fatalf("old run %s %v, %v; want cancelled with %s=%s", old.Status, old.Attributes, err, worlds.AttrResetTo, got.RunID)
			}
			moved, err := h.w.GetHookByToken(ctx, token)
			if err != nil || moved.RunID != got.RunID || moved.HookID == hook.HookID {
				t.Fatalf("token owned by %+v, %v; want a hook of run %s", moved, err, got.RunID)
			}
			if _, err := workflow.ResumeHook(ctx, h.c, token, "ann"); err != nil {
				t.Fatal(err)
			}
			out, err := workflow.Attach[string](h.c, got.RunID).Result(ctx)
			if want := w.name + t.Name() + "+a1+a2+ann"; err != nil || out != want {
				t.Fatalf("new run: %q, %v; want %q", out, err, want)
			}
			if a1, a2, a3 := c.get("a1"), c.get("a2"), c.get("a3"); a1 != 1 || a2 != 1 || a3 != 1 {
				t.Fatalf("steps ran a1=%d a2=%d a3=%d times, want once each", a1, a2, a3)
			}
		})
	}
}

// Reset points out of range, inside a step or at the run's end are refused
// with a *ResetPointError naming the value, and nothing is created.
func TestResetBadPoint(t *testing.T) {
	t.Parallel()
	c := &counter{}
	broken := &atomic.Bool{}
	broken.Store(true)
	wf := Deploy{c: c, broken: broken}
	h := serve(t, testWorlds[1].open(t), workflow.Config{}, workflow.Use(wf))
	ctx := resultCtx(t)
	run, err := workflow.Start(ctx, h.c, wf, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = run.Result(ctx)
	events, err := worlds.AllEvents(ctx, h.w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	var inStep int64
	for _, ev := range events {
		if ev.Type == worlds.EventStepStarted && ev.CorrelationID == "step_4" {
			inStep = ev.Seq
		}
	}
	n := int64(len(events))
	cases := []struct {
		name string
		seq  int64
		want string
	}{
		{"zero", 0, "out of range"},
		{"past the end", n + 1, fmt.Sprintf("out of range: the run has events 1 to %d", n)},
		{"inside a step", inStep, `step "s4" (step_4`},
		{"the run's end", n, "the run's end"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := run.ID() + "-" + fmt.Sprint(tc.seq)
			_, err := h.c.Reset(ctx, run.ID(), workflow.ResetToEvent(tc.seq), workflow.WithResetRunID(id))
			var pe *worlds.ResetPointError
			if !errors.As(err, &pe) || pe.Seq != tc.seq || !errors.Is(err, worlds.ErrResetPoint) || !errors.Is(err, worlds.ErrInvalidArgument) {
				t.Fatalf("err = %v; want a *ResetPointError for %d", err, tc.seq)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, fmt.Sprintf("event %d", tc.seq)) {
				t.Fatalf("err = %q; want it to name event %d and say %q", msg, tc.seq, tc.want)
			}
			if _, err := h.c.GetRun(ctx, id); !errors.Is(err, worlds.ErrRunNotFound) {
				t.Fatalf("a refused reset created run %s: %v", id, err)
			}
		})
	}
}
