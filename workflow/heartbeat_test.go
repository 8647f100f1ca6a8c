package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// Copier copies 10 items in a step with a heartbeat timeout; its first attempt
// reports progress up to item 4 and then hangs (stops heartbeating, waiting for
// its context); the next attempt resumes from the recorded details.
type Copier struct{ c *counter }

func (Copier) WorkflowName() string { return "copier" }

func (w Copier) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "copy", w.copy, 10, workflow.WithHeartbeatTimeout(300*time.Millisecond),
		workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond}))
}

func (w Copier) copy(ctx context.Context, n int) (int, error) {
	attempt := w.c.inc("attempt")
	from, err := workflow.HeartbeatDetails[int](ctx)
	if attempt == 1 {
		if !errors.Is(err, workflow.ErrNoHeartbeatDetails) {
			return 0, workflow.Fatal(fmt.Errorf("first attempt found details: %d, %v", from, err))
		}
		for i := 0; i < 5; i++ {
			if err := workflow.Heartbeat(ctx, i); err != nil {
				return 0, err
			}
		}
		<-ctx.Done() // hung: no more heartbeats
		if !errors.Is(context.Cause(ctx), workflow.ErrHeartbeatTimeout) {
			return 0, workflow.Fatal(fmt.Errorf("context cause %v, want the heartbeat timeout", context.Cause(ctx)))
		}
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, workflow.Fatal(err)
	}
	return from*100 + attempt, nil
}

// A step that stops heartbeating is failed (retryably) by its own process and
// retried; the retry reads the last details, including throttled ones.
func TestHeartbeatTimeoutRetries(t *testing.T) {
	t.Parallel()
	for _, w := range testWorlds {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			c := &counter{}
			h := serve(t, w.open(t), workflow.Config{}, workflow.Use(Copier{c: c}))
			run, err := workflow.Start(context.Background(), h.c, Copier{c: c}, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(resultCtx(t))
			if err != nil || got != 402 {
				t.Fatalf("Result = %d, %v; want 402 (resumed from item 4 in attempt 2)", got, err)
			}
			events, err := worlds.AllEvents(context.Background(), h.w, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			var retryType string
			for _, ev := range events {
				if ev.Type == worlds.EventStepRetrying {
					retryType = ev.Error.Type
				}
			}
			if retryType != workflow.ErrorTypeHeartbeatTimeout {
				t.Fatalf("retry recorded with type %q, want %q", retryType, workflow.ErrorTypeHeartbeatTimeout)
			}
		})
	}
}

// Resumer is the workflow whose first attempt a dead process left running.
type Resumer struct{ c *counter }

func (Resumer) WorkflowName() string { return "resumer" }

func (w Resumer) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "resume", func(sctx context.Context, _ int) (int, error) {
		w.c.inc("attempt")
		from, err := workflow.HeartbeatDetails[int](sctx)
		if err != nil {
			return 0, workflow.Fatal(err)
		}
		return from, nil
	}, 0, workflow.WithHeartbeatTimeout(200*time.Millisecond), workflow.WithRetry(workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond}))
}

// A process that died running an attempt leaves it started, with its last
// heartbeat and the check it queued at the deadline: the check fails the
// attempt long before the delivery's lease would, and the retry resumes from
// the details.
func TestHeartbeatOfDeadWorker(t *testing.T) {
	t.Parallel()
	for _, w := range testWorlds {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			world := w.open(t)
			ctx := context.Background()
			runID := "run-dead-" + w.name + fmt.Sprint(time.Now().UnixNano())
			// What the dead process wrote: the run, the step started with a
			// heartbeat timeout, one heartbeat with details, and its check.
			if _, err := world.Append(ctx, runID, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "resumer", Input: json.RawMessage(`0`)}); err != nil {
				t.Fatal(err)
			}
			if _, err := world.Append(ctx, runID,
				worlds.Event{Type: worlds.EventRunStarted},
				worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "step_1", StepName: "resume", Input: json.RawMessage(`0`)},
				worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "step_1", Attempt: 1, HeartbeatTimeout: 200 * time.Millisecond},
				worlds.Event{Type: worlds.EventStepHeartbeat, CorrelationID: "step_1", Attempt: 1, Payload: json.RawMessage(`7`)},
			); err != nil {
				t.Fatal(err)
			}
			if _, err := world.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: "resumer", RunID: runID, StepID: "step_1", Attempt: 1},
				worlds.QueueOptions{DueAt: time.Now().Add(200 * time.Millisecond), ID: "hb-" + runID + "-step_1-1-x"}); err != nil {
				t.Fatal(err)
			}
			c := &counter{}
			h := serve(t, world, workflow.Config{}, workflow.Use(Resumer{c: c}))
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			run, err := h.c.Wait(wctx, runID)
			if err != nil || string(run.Output) != "7" || c.get("attempt") != 1 {
				t.Fatalf("run %s output %s, %v after %d attempts; want 7 from the second attempt", run.Status, run.Output, err, c.get("attempt"))
			}
			step, err := world.GetStep(ctx, runID, "step_1")
			if err != nil || step.Attempt != 2 {
				t.Fatalf("step %+v, %v; want completed by attempt 2", step, err)
			}
		})
	}
}

func TestHeartbeatOutsideStep(t *testing.T) {
	t.Parallel()
	if err := workflow.Heartbeat(context.Background(), 1); !errors.Is(err, workflow.ErrNotInStep) {
		t.Fatalf("Heartbeat = %v, want ErrNotInStep", err)
	}
	if _, err := workflow.HeartbeatDetails[int](context.Background()); !errors.Is(err, workflow.ErrNotInStep) {
		t.Fatalf("HeartbeatDetails = %v, want ErrNotInStep", err)
	}
}
