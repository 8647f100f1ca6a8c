package workflow_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// endLostWorld commits, once per run, the append that starts and ends a run in
// one write (a run whose first delivery reaches its end), and then reports a
// failure: the World applied the write but its answer was lost.
type endLostWorld struct {
	worlds.World
	mu   sync.Mutex
	lost map[string]bool
}

func (l *endLostWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	stored, err := l.World.Append(ctx, runID, events...)
	if err != nil {
		return stored, err
	}
	starts := slices.ContainsFunc(events, func(ev worlds.Event) bool { return ev.Type == worlds.EventRunStarted })
	ends := slices.ContainsFunc(events, func(ev worlds.Event) bool {
		return ev.Type == worlds.EventRunCompleted || ev.Type == worlds.EventRunFailed
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if starts && ends && !l.lost[runID] {
		if l.lost == nil {
			l.lost = map[string]bool{}
		}
		l.lost[runID] = true
		return nil, errors.New("injected: append applied, answer lost")
	}
	return stored, nil
}

func (l *endLostWorld) lostFor(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost[runID]
}

// Hop continues as new without running a step until its input reaches 2.
type Hop struct{}

func (Hop) Run(ctx workflow.Context, n int) (int, error) {
	if n < 2 {
		return 0, workflow.ContinueAsNew(ctx, n+1)
	}
	return n * 100, nil
}

// QuickParent waits for a Looper child that ends in its first delivery.
type QuickParent struct{}

func (QuickParent) Run(ctx workflow.Context, n int) (int, error) {
	return workflow.StartChild(ctx, Looper{}, loopIn{N: n, Until: n, Every: 1}).Get(ctx)
}

// driveUntil runs w's deliveries with r until runID ends, or fails the test when
// nothing that could move it is left.
func driveUntil(t *testing.T, w *memworld.World, r worlds.Runner, runID string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 500; i++ {
		if got, err := w.GetRun(ctx, runID); err == nil && got.Status.Terminal() {
			return
		}
		if n, _ := w.RunOne(ctx, r); n == 0 {
			if len(w.Queued()) == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond) // a failed delivery comes back shortly
		}
	}
	got, err := w.GetRun(ctx, runID)
	t.Fatalf("run %s is stuck: %+v, %v; nothing queued moves it (queued %+v)", runID, got, err, w.Queued())
}

// A run whose first delivery ends it writes run_started and its end in one
// append. When that append is applied but its answer lost, the delivery must be
// retried as a redelivery, which finds the run ended and goes on from the end:
// queueing the continuation, telling the parent. Acknowledging it instead left
// the continuation pending and the parent waiting for ever.
func TestEndWithLostAnswerInFirstDelivery(t *testing.T) {
	t.Parallel()
	for _, cache := range []bool{true, false} {
		name := map[bool]string{true: "cache", false: "nocache"}[cache]
		t.Run("continuation/"+name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := memworld.New()
			cl, err := workflow.NewClient(workflow.Config{World: w, Cache: workflow.CacheConfig{Disabled: !cache}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.FlushCache)
			lw := &endLostWorld{World: w}
			r := worldRunner{inner: cl.Runner(workflow.Use(Hop{})), world: lw}
			run, err := workflow.Start(ctx, cl, Hop{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			driveUntil(t, w, r, run.ID())
			next := run.ID() + "-cont-1"
			driveUntil(t, w, r, next)
			driveUntil(t, w, r, run.ID()+"-cont-2")
			if !lw.lostFor(run.ID()) || !lw.lostFor(next) {
				t.Fatal("no answer was lost; the test proved nothing")
			}
			if got, err := run.Result(resultCtx(t)); err != nil || got != 200 {
				t.Fatalf("Result = %d, %v; want 200", got, err)
			}
		})
		t.Run("child/"+name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := memworld.New()
			cl, err := workflow.NewClient(workflow.Config{World: w, Cache: workflow.CacheConfig{Disabled: !cache}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.FlushCache)
			lw := &endLostWorld{World: w}
			r := worldRunner{inner: cl.Runner(worlds.Runners(workflow.Use(QuickParent{}), workflow.Use(Looper{}))), world: lw}
			run, err := workflow.Start(ctx, cl, QuickParent{}, 4)
			if err != nil {
				t.Fatal(err)
			}
			driveUntil(t, w, r, run.ID())
			if !lw.lostFor(workflow.ChildRunID(run.ID(), "step_1")) {
				t.Fatal("the child's answer was not lost; the test proved nothing")
			}
			if got, err := run.Result(resultCtx(t)); err != nil || got != 40 {
				t.Fatalf("Result = %d, %v; want 40", got, err)
			}
		})
	}
}

// startFailWorld fails, once, the append that would end runID and then the
// append of its run_started alone: the World unreachable for the whole of the
// run's first delivery, after the delivery created the continuation.
type startFailWorld struct {
	worlds.World
	runID string
	mu    sync.Mutex
	left  int
}

func (f *startFailWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	f.mu.Lock()
	fail := runID == f.runID && f.left > 0 && events[0].Type == worlds.EventRunStarted
	if fail {
		f.left--
	}
	f.mu.Unlock()
	if fail {
		return nil, errors.New("injected: World unreachable")
	}
	return f.World.Append(ctx, runID, events...)
}

// A run cancelled while still pending, after a delivery created its
// continuation but could write neither the run's end nor its start, takes the
// continuation with it: nothing else ever starts or ends that run.
func TestCancelPendingRunWithContinuation(t *testing.T) {
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
	fw := &startFailWorld{World: w, runID: run.ID(), left: 2}
	r := worldRunner{inner: c.Runner(workflow.Use(ContinueOnce{})), world: fw}
	w.RunOne(ctx, r)
	if got, err := w.GetRun(ctx, run.ID()); err != nil || got.Status != worlds.RunPending {
		t.Fatalf("run after the failed delivery = %+v, %v; want it still pending", got, err)
	}
	next := run.ID() + "-cont-1"
	if got, err := w.GetRun(ctx, next); err != nil || got.Status != worlds.RunPending {
		t.Fatalf("continuation = %+v, %v; want it created and pending", got, err)
	}
	if err := c.Cancel(ctx, run.ID(), "stop"); err != nil {
		t.Fatal(err)
	}
	driveUntil(t, w, r, run.ID())
	for range 10 {
		w.RunOne(ctx, r)
	}
	for _, id := range []string{run.ID(), next} {
		if got, err := w.GetRun(ctx, id); err != nil || got.Status != worlds.RunCancelled {
			t.Fatalf("run %s = %+v, %v; want cancelled", id, got, err)
		}
	}
}
