package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// errSink collects the errors of calls made from plain goroutines.
type errSink struct {
	mu   sync.Mutex
	errs map[string]error
}

func (s *errSink) put(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errs == nil {
		s.errs = map[string]error{}
	}
	s.errs[name] = err
}

func (s *errSink) get() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]error, len(s.errs))
	for k, v := range s.errs {
		out[k] = v
	}
	return out
}

// TwoGoroutines calls workflow.Step from two plain goroutines and sums what
// they send back, as in issue reports of a delivery that hung for ever.
type TwoGoroutines struct{ sink *errSink }

func (w TwoGoroutines) Run(ctx workflow.Context, n int) (int, error) {
	res := make(chan int, 2)
	for i := range 2 {
		go func() {
			v, err := workflow.Step(ctx, fmt.Sprintf("s%d", i), func(_ context.Context, n int) (int, error) { return n, nil }, n)
			w.sink.put(fmt.Sprintf("s%d", i), err)
			res <- v
		}()
	}
	return <-res + <-res, nil
}

// wantGoroutineErrors checks that each call failed with a *GoroutineError naming it.
func wantGoroutineErrors(t *testing.T, got map[string]error, want map[string]string) {
	t.Helper()
	for key, call := range want {
		err := got[key]
		var ge *workflow.GoroutineError
		if !errors.Is(err, workflow.ErrNotWorkflowGoroutine) || !errors.As(err, &ge) || ge.Call != call || !strings.Contains(err.Error(), call) {
			t.Errorf("%s from a plain goroutine: %v; want a *GoroutineError naming %s", key, err, call)
		}
	}
}

// Steps called from plain goroutines fail at once with a typed error, and the
// run ends within its context's deadline with nothing recorded for them.
func testStepFromPlainGoroutines(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	sink := &errSink{}
	client, _ := server(t, w, workflow.Config{}, workflow.Use(TwoGoroutines{sink: sink}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := workflow.Start(ctx, client, TwoGoroutines{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != 0 {
		t.Fatalf("Result = %d, %v; want 0 (both steps refused)", out, err)
	}
	wantGoroutineErrors(t, sink.get(), map[string]string{"s0": "workflow.Step", "s1": "workflow.Step"})
	if n := countEvents(t, w, run.ID(), worlds.EventStepCreated); n != 0 {
		t.Errorf("%d steps recorded from plain goroutines, want 0", n)
	}
}

// Escapes hands its context and its futures to a plain goroutine, which calls
// each kind of operation with them; then it goes on itself.
type Escapes struct{ sink *errSink }

func (w Escapes) Run(ctx workflow.Context, _ int) (string, error) {
	f := workflow.Go(ctx, "mine", func(context.Context, int) (int, error) { return 1, nil }, 0)
	timer := workflow.NewTimer(ctx, time.Millisecond)
	done := make(chan time.Time)
	go func() {
		_, err := f.Get(ctx)
		w.sink.put("Future.Get", err)
		w.sink.put("Timer.Get", timer.Get(ctx))
		w.sink.put("Sleep", workflow.Sleep(ctx, time.Second))
		w.sink.put("NewTimer", workflow.NewTimer(ctx, time.Second).Get(ctx))
		_, err = workflow.Select(ctx, f)
		w.sink.put("Select", err)
		_, err = workflow.CreateHook[string](ctx, workflow.HookOptions{})
		w.sink.put("CreateHook", err)
		done <- workflow.Now(ctx)
	}()
	if now := <-done; !now.IsZero() {
		return "", fmt.Errorf("Now from a plain goroutine = %v, want the zero time", now)
	}
	if _, err := f.Get(ctx); err != nil {
		return "", err
	}
	return "ok", timer.Get(ctx)
}

func TestOperationsFromPlainGoroutineNameTheCall(t *testing.T) {
	t.Parallel()
	w := testWorlds[0].open(t)
	sink := &errSink{}
	client, _ := server(t, w, workflow.Config{}, workflow.Use(Escapes{sink: sink}))
	run, err := workflow.Start(context.Background(), client, Escapes{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "ok" {
		t.Fatalf("Result = %q, %v; want the workflow's own calls to work", out, err)
	}
	wantGoroutineErrors(t, sink.get(), map[string]string{
		"Future.Get": "workflow.Future.Get", "Timer.Get": "workflow.Timer.Get", "Sleep": "workflow.Sleep",
		"NewTimer": "workflow.NewTimer", "Select": "workflow.Select", "CreateHook": "workflow.CreateHook",
	})
}

// Stuck blocks on its own channel between two steps while stuck is set.
type Stuck struct {
	c       *counter
	stuck   *atomic.Bool
	release chan struct{}
}

func (Stuck) WorkflowName() string { return "stuck" }

func (w Stuck) Run(ctx workflow.Context, n int) (int, error) {
	a, err := workflow.Step(ctx, "a", func(_ context.Context, n int) (int, error) { w.c.inc("a"); return n + 1, nil }, n)
	if err != nil {
		return 0, err
	}
	if w.stuck != nil && w.stuck.Load() {
		<-w.release // the runtime cannot see this wait
	}
	return workflow.Step(ctx, "b", func(_ context.Context, n int) (int, error) { w.c.inc("b"); return n * 2, nil }, a)
}

// Workflow code blocked on its own channel does not hold its delivery: after
// the deadlock timeout the delivery records the run as blocked on a
// *DeadlockError with the goroutine's stack, the same worker then runs fixed
// code to the run's end with each step run once, and Serve returns. The stuck goroutine is the code's own: once its
// channel is ready its next workflow operation ends it (goleak checks).
func testStuckCodeEndsDelivery(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	c := &counter{}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := new(atomic.Bool)
	stuck.Store(true)
	cfg := workflow.Config{DeadlockTimeout: 50 * time.Millisecond, BlockedRetry: fastBlocked}
	client, stop := server(t, w, cfg, workflow.Use(Stuck{c: c, stuck: stuck, release: release}))
	run, err := workflow.Start(context.Background(), client, Stuck{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	b := waitBlocked(t, w, run.ID()).Blocked
	if b.Error.Type != "deadlock" || !strings.Contains(b.Error.Message, "did not yield within 50ms") || !strings.Contains(b.Error.Stack, "Stuck") {
		t.Fatalf("blocked on %+v; want a deadlock with the stack of Stuck.Run", b)
	}
	stuck.Store(false) // the fixed deploy
	out, err := workflow.Attach[int](client, run.ID()).Result(resultCtx(t))
	if err != nil || out != 10 {
		t.Fatalf("Result after the fix = %d, %v; want 10", out, err)
	}
	if a, bn := c.get("a"), c.get("b"); a != 1 || bn != 1 {
		t.Errorf("step a ran %d times, b %d times; want each once", a, bn)
	}
	stop() // fails the test if a delivery is still waiting for the code
}
