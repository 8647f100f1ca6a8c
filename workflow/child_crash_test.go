package workflow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// flakyLinkWorld fails, once each, the first append to parentID of a step
// outcome (a child's end reaching its parent) and the first queueing of a run
// whose ID contains "-cont-" (a continuation's first delivery), as a World
// unreachable for a moment right after a run ended.
type flakyLinkWorld struct {
	worlds.World
	parentID         string
	mu               sync.Mutex
	failedNotify     bool
	failedContinue   bool
	notified, queued int
}

func (f *flakyLinkWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	f.mu.Lock()
	fail := runID == f.parentID && len(events) == 1 && events[0].Type == worlds.EventStepCompleted && !f.failedNotify
	if fail {
		f.failedNotify = true
	}
	f.mu.Unlock()
	if fail {
		return nil, errors.New("injected: parent's log unreachable")
	}
	return f.World.Append(ctx, runID, events...)
}

func (f *flakyLinkWorld) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	f.mu.Lock()
	fail := strings.Contains(in.RunID, "-cont-") && !f.failedContinue
	if fail {
		f.failedContinue = true
	}
	f.mu.Unlock()
	if fail {
		return "", errors.New("injected: queue throttled")
	}
	return f.World.Queue(ctx, in, opts)
}

// A child whose end cannot be recorded in its parent's log at once, and whose
// continuation's first delivery cannot be queued at once, fails its delivery;
// the redelivery finds the run ended and does both, so neither the parent nor
// the continuation waits for ever.
func TestChildEndAndContinuationSurviveAFailedWrite(t *testing.T) {
	t.Parallel()
	for _, cache := range []bool{true, false} {
		t.Run(map[bool]string{true: "cache", false: "nocache"}[cache], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := memworld.New()
			cl, err := workflow.NewClient(workflow.Config{World: w, Cache: workflow.CacheConfig{Disabled: !cache}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.FlushCache)
			run, err := workflow.Start(ctx, cl, LoopParent{}, 3)
			if err != nil {
				t.Fatal(err)
			}
			fw := &flakyLinkWorld{World: w, parentID: run.ID()}
			r := worldRunner{inner: cl.Runner(worlds.Runners(workflow.Use(LoopParent{}), workflow.Use(Looper{}))), world: fw}
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, err := w.GetRun(ctx, run.ID())
				if err == nil && got.Status.Terminal() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("parent never ended: %+v, %v", got, err)
				}
				if n, _ := w.RunOne(ctx, r); n == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if !fw.failedNotify || !fw.failedContinue {
				t.Fatalf("faults not injected: notify %v, continue %v", fw.failedNotify, fw.failedContinue)
			}
			if got, err := run.Result(resultCtx(t)); err != nil || got != 30 {
				t.Fatalf("Result = %d, %v; want 30", got, err)
			}
		})
	}
}

// recordingRunner remembers the step deliveries it ran.
type recordingRunner struct {
	worlds.Runner
	mu    sync.Mutex
	steps []worlds.Delivery
}

func (r *recordingRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	err := r.Runner.Run(ctx, w, d)
	if d.Input.Kind == worlds.DeliverStep {
		r.mu.Lock()
		r.steps = append(r.steps, d)
		r.mu.Unlock()
	}
	return err
}

// The attempt that creates a child, run again (a redelivery after its worker
// died), finds the child it created and starts no second one.
func TestChildCreationIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := memworld.New()
	cl, err := workflow.NewClient(workflow.Config{World: w, QueueSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.FlushCache)
	r := &recordingRunner{Runner: cl.Runner(worlds.Runners(workflow.Use(Family{}), workflow.Use(Doubler{})))}
	run, err := workflow.Start(ctx, cl, Family{}, familyIn{Ns: []int{4}})
	if err != nil {
		t.Fatal(err)
	}
	childID := workflow.ChildRunID(run.ID(), "step_1")
	for i := 0; i < 50; i++ {
		if _, err := w.GetRun(ctx, childID); err == nil {
			break
		}
		w.RunOne(ctx, r)
	}
	if len(r.steps) != 1 || r.steps[0].Input.RunID != run.ID() {
		t.Fatalf("step deliveries after the child's creation: %+v", r.steps)
	}
	w.Redeliver(r.steps[0]) // received again: attempt 2 of the creation
	deadline := time.Now().Add(10 * time.Second)
	for st, _ := run.Status(ctx); !st.Terminal(); st, _ = run.Status(ctx) {
		if time.Now().After(deadline) {
			t.Fatal("parent never ended")
		}
		if n, _ := w.RunOne(ctx, r); n == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got.Sum != 8 {
		t.Fatalf("Result = %+v, %v", got, err)
	}
	runs, err := w.ListRuns(ctx, worlds.RunFilter{WorkflowName: "workflow_test.Doubler"})
	if err != nil || len(runs.Items) != 1 {
		t.Fatalf("child runs = %d, %v; want 1", len(runs.Items), err)
	}
	step, err := w.GetStep(ctx, run.ID(), "step_1")
	if err != nil || step.Attempt != 2 || step.Status != worlds.StepCompleted {
		t.Fatalf("creation step = %+v, %v; want completed after 2 attempts", step, err)
	}
}
