package workflow_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// fastBlocked retries blocked runs within milliseconds, so tests don't wait.
var fastBlocked = workflow.BlockedRetry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}

// Fragile runs step "a", then hits a nil-map panic while broken, then runs
// step "b". Clearing broken is the deploy of fixed code: the same workflow (one
// name) whose next deliveries get past the panic.
type Fragile struct {
	c      *counter
	broken *atomic.Bool
}

func (Fragile) WorkflowName() string { return "fragile" }

func (w Fragile) Run(ctx workflow.Context, n int) (int, error) {
	a, err := workflow.Step(ctx, "a", func(_ context.Context, n int) (int, error) { w.c.inc("a"); return n + 1, nil }, n)
	if err != nil {
		return 0, err
	}
	if w.broken != nil && w.broken.Load() {
		var seen map[string]int
		seen["a"] = a // assignment to entry in nil map
	}
	return workflow.Step(ctx, "b", func(_ context.Context, n int) (int, error) { w.c.inc("b"); return n * 2, nil }, a)
}

// server serves runners on w until stop is called; stop fails the test when
// the World's Serve does not return, which it does only once the deliveries
// in flight have ended.
func server(t *testing.T, w worlds.World, cfg workflow.Config, runners ...worlds.Runner) (c *workflow.Client, stop func()) {
	t.Helper()
	cfg.World = w
	if cacheOff(t) {
		cfg.Cache.Disabled = true
	}
	c, err := workflow.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, runners...) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-resultCtx(t).Done():
			t.Fatal("Serve did not return: a delivery is stuck")
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// waitBlocked waits until run runID is blocked and returns its view.
func waitBlocked(t *testing.T, w worlds.World, runID string) worlds.Run {
	t.Helper()
	var run worlds.Run
	waitFor(t, func() bool {
		r, err := w.GetRun(context.Background(), runID)
		run = r
		return err == nil && (r.Blocked != nil || r.Status.Terminal())
	})
	if run.Status != worlds.RunRunning || run.Blocked == nil {
		t.Fatalf("run %s: status %s, blocked %+v; want running and blocked", runID, run.Status, run.Blocked)
	}
	return run
}

func countEvents(t *testing.T, w worlds.World, runID string, typ worlds.EventType) int {
	t.Helper()
	evs, err := worlds.AllEvents(context.Background(), w, runID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// A workflow that panics leaves its run running and blocked, with the panic and
// its stack in the log; deploying fixed code resumes it, and every step runs
// once.
func testPanicBlocksUntilFixed(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	c := &counter{}
	broken := new(atomic.Bool)
	broken.Store(true)
	client, stop := server(t, w, workflow.Config{BlockedRetry: fastBlocked}, workflow.Use(Fragile{c: c, broken: broken}))
	run, err := workflow.Start(context.Background(), client, Fragile{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	view := waitBlocked(t, w, run.ID())
	b := view.Blocked
	if b.Error.Type != "panic" || !strings.Contains(b.Error.Message, "assignment to entry in nil map") ||
		!strings.Contains(b.Error.Stack, "Fragile") || b.Since.IsZero() {
		t.Fatalf("blocked on %+v; want the nil-map panic with a stack through Fragile.Run", b)
	}
	if err := workflow.Blocked(view); !errors.Is(err, workflow.ErrWorkflowCode) {
		t.Errorf("Blocked(view) = %v, want an error matching ErrWorkflowCode", err)
	}
	// Let the run be redelivered while still broken: it stays blocked on the
	// same error, recorded once.
	waitFor(t, func() bool { return c.get("a") == 1 && countEvents(t, w, run.ID(), worlds.EventRunBlocked) == 1 })
	time.Sleep(3 * fastBlocked.Max)
	if n := countEvents(t, w, run.ID(), worlds.EventRunBlocked); n != 1 {
		t.Errorf("%d run_blocked events for one unchanged error, want 1", n)
	}
	if view, err := w.GetRun(context.Background(), run.ID()); err != nil || view.Status != worlds.RunRunning {
		t.Fatalf("after redeliveries of broken code: %+v, %v; want running", view, err)
	}

	broken.Store(false) // the fixed deploy
	out, err := workflow.Attach[int](client, run.ID()).Result(resultCtx(t))
	if err != nil || out != 10 {
		t.Fatalf("Result after the fix = %d, %v; want 10", out, err)
	}
	if a, bn := c.get("a"), c.get("b"); a != 1 || bn != 1 {
		t.Errorf("step a ran %d times, b %d times; want each once", a, bn)
	}
	if view, err := w.GetRun(context.Background(), run.ID()); err != nil || view.Blocked != nil {
		t.Errorf("completed run still blocked: %+v, %v", view.Blocked, err)
	}
	if n := countEvents(t, w, run.ID(), worlds.EventRunUnblocked); n != 1 {
		t.Errorf("%d run_unblocked events, want 1", n)
	}
	stop() // fails the test if a delivery is stuck
}

// With FailOnCodeError, set per workflow over the Config's default, the panic
// fails the run at once.
func TestPanicFailsWithFailOnCodeError(t *testing.T) {
	t.Parallel()
	w := memworld.New()
	c := &counter{}
	broken := new(atomic.Bool)
	broken.Store(true)
	client, _ := server(t, w, workflow.Config{}, workflow.Use(Fragile{c: c, broken: broken}, workflow.OnCodeError(workflow.FailOnCodeError)))
	run, err := workflow.Start(context.Background(), client, Fragile{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	_, err = workflow.Attach[int](client, run.ID()).Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || re.Info.Type != "panic" || !re.Info.Fatal || re.Info.Stack == "" {
		t.Fatalf("Result = %v, want the panic as a fatal run failure with its stack", err)
	}
}

func TestCodeErrorPolicyValidated(t *testing.T) {
	t.Parallel()
	for _, cfg := range []workflow.Config{
		{World: memworld.New(), CodeErrors: workflow.CodeErrorPolicy(7)},
		{World: memworld.New(), BlockedRetry: workflow.BlockedRetry{Initial: -time.Second}},
		{World: memworld.New(), BlockedRetry: workflow.BlockedRetry{Initial: time.Minute, Max: time.Second}},
		{World: memworld.New(), DeadlockTimeout: -time.Second},
	} {
		var ce *workflow.ConfigError
		if _, err := workflow.NewClient(cfg); !errors.As(err, &ce) || ce.Field == "" {
			t.Errorf("NewClient(%+v) = %v, want a *ConfigError naming the field", cfg, err)
		}
	}
}

// testBlockedThenFixed drives run runID, whose code now diverges from its log,
// until it is blocked on the divergence, checks it stays blocked on one
// recorded error while redelivered, then calls fix and drives it to its end.
func testBlockedThenFixed(t *testing.T, w *memworld.World, r worlds.Runner, runID, wantIn string, fix func()) {
	t.Helper()
	ctx := context.Background()
	drive := func(cond func(worlds.Run) bool) worlds.Run {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			w.RunOne(ctx, r)
			run, err := w.GetRun(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if cond(run) {
				return run
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s: %s, blocked %+v", runID, run.Status, run.Blocked)
			}
			time.Sleep(time.Millisecond)
		}
	}
	run := drive(func(r worlds.Run) bool { return r.Blocked != nil || r.Status.Terminal() })
	if run.Status != worlds.RunRunning || run.Blocked == nil || run.Blocked.Error.Type != "nondeterminism" ||
		!strings.Contains(run.Blocked.Error.Message, wantIn) || run.Blocked.Error.Stack == "" {
		t.Fatalf("run %s: %s, blocked %+v; want running, blocked on the divergence with its stack", runID, run.Status, run.Blocked)
	}
	for range 3 {
		time.Sleep(5 * time.Millisecond)
		w.RunOne(ctx, r)
	}
	if n := countEvents(t, w, runID, worlds.EventRunBlocked); n != 1 {
		t.Errorf("%d run_blocked events, want 1", n)
	}
	fix()
	run = drive(func(r worlds.Run) bool { return r.Status.Terminal() })
	if run.Status != worlds.RunCompleted || run.Blocked != nil || string(run.Output) != `"done"` {
		t.Fatalf("after the fix: %s, output %s, blocked %+v; want completed with \"done\"", run.Status, run.Output, run.Blocked)
	}
}
