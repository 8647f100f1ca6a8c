package workflow_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// dupEndWorld lets a duplicate of a delivery end the run first: before the
// first append that would end runID, it runs delivery d again to the end, as
// a second receiver of the same message would, concurrently.
type dupEndWorld struct {
	worlds.World
	runID string
	r     worlds.Runner
	mu    sync.Mutex
	raced bool
}

func (f *dupEndWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	ends := slices.ContainsFunc(events, func(ev worlds.Event) bool { return ev.Type == worlds.EventRunCompleted })
	f.mu.Lock()
	race := runID == f.runID && ends && !f.raced
	f.raced = f.raced || race
	f.mu.Unlock()
	if race {
		run, err := f.World.GetRun(ctx, runID)
		if err != nil {
			return nil, err
		}
		if err := f.r.Run(ctx, f, worlds.Delivery{ID: "dup", Input: worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: run.WorkflowName, RunID: runID}, Attempt: 1}); err != nil {
			return nil, err
		}
	}
	return f.World.Append(ctx, runID, events...)
}

// Two deliveries of a run that continues as new race to its end. The one that
// loses finds the run ended (ErrGone) and must leave the continuation the
// winner created alone: cancelling it as abandoned broke the chain, and the
// chain, and any parent waiting on it, ended cancelled.
func TestDuplicateEndKeepsTheContinuation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := memworld.New()
	cl, err := workflow.NewClient(workflow.Config{World: w, QueueSteps: true, Cache: workflow.CacheConfig{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := workflow.Start(ctx, cl, Looper{}, loopIn{Until: 2, Every: 1})
	if err != nil {
		t.Fatal(err)
	}
	dw := &dupEndWorld{World: w, runID: run.ID()}
	r := worldRunner{inner: cl.Runner(workflow.Use(Looper{})), world: dw}
	dw.r = cl.Runner(workflow.Use(Looper{}))
	driveUntil(t, w, r, run.ID())
	driveUntil(t, w, r, run.ID()+"-cont-1")
	driveUntil(t, w, r, run.ID()+"-cont-2")
	if !dw.raced {
		t.Fatal("no duplicate raced to the end; the test proved nothing")
	}
	if got, err := run.Result(resultCtx(t)); err != nil || got != 20 {
		t.Fatalf("Result = %d, %v; want 20 from the chain's last run", got, err)
	}
}
