package reliability_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/chaos"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// recorder is the idempotent side-effect sink: applying an effect twice under one
// key is a no-op, as a payment provider with idempotency keys would make it. It
// also counts raw executions, which faults may legitimately repeat.
type recorder struct {
	mu      sync.Mutex
	applied map[string]int // key -> times the effect was applied (must end at 1)
	raw     map[string]int // key -> times the step body ran
}

func newRecorder() *recorder { return &recorder{applied: map[string]int{}, raw: map[string]int{}} }

func (r *recorder) do(ctx context.Context, what string) error {
	info, ok := workflow.InfoFrom(ctx)
	if !ok {
		return fmt.Errorf("step %s ran without workflow identity", what)
	}
	key := info.RunID + "/" + info.StepID + "/" + what
	r.mu.Lock()
	defer r.mu.Unlock()
	r.raw[key]++
	if r.applied[key] == 0 {
		r.applied[key] = 1
	}
	return nil
}

// count returns the number of distinct effects applied.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.applied)
}

// reruns returns how many times step bodies ran beyond once per effect.
func (r *recorder) reruns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.raw {
		n += k - 1
	}
	return n
}

// Order is a workflow shaped like a real one: sequential steps, a durable sleep
// and two parallel branches.
type Order struct{ rec *recorder }

func (o Order) Run(ctx workflow.Context, n int) (int, error) {
	step := func(name string) func(context.Context, int) (int, error) {
		return func(ctx context.Context, v int) (int, error) {
			if err := o.rec.do(ctx, name); err != nil {
				return 0, workflow.Fatal(err)
			}
			return v + 1, nil
		}
	}
	retry := workflow.WithMaxAttempts(20)
	v, err := workflow.Step(ctx, "reserve", step("reserve"), n, retry)
	if err != nil {
		return 0, err
	}
	if err := workflow.Sleep(ctx, 30*time.Millisecond); err != nil {
		return 0, err
	}
	a := workflow.Go(ctx, "charge", step("charge"), v, retry)
	b := workflow.Go(ctx, "notify", step("notify"), v, retry)
	av, err := a.Get(ctx)
	if err != nil {
		return 0, err
	}
	bv, err := b.Get(ctx)
	if err != nil {
		return 0, err
	}
	return workflow.Step(ctx, "ship", step("ship"), av+bv, retry)
}

func seed(t *testing.T) uint64 {
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// chaosClient opens an embedded World in the test's directory, wraps it in
// faults at rates drawn from seed, and returns it, the faulty World over it
// and a client on that. The World is closed when the test ends.
func chaosClient(ctx context.Context, t *testing.T, rates chaos.Rates, seed uint64) (*local.World, *chaos.World, *workflow.Client) {
	t.Helper()
	base, err := local.Open(ctx, local.Config{Path: t.TempDir() + "/chaos.db", Workers: 8, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	faulty, err := chaos.Wrap(base, rates, seed)
	if err != nil {
		t.Fatal(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: faulty, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return base, faulty, client
}

// TestFaultsLoseNothing runs orders on the embedded World while appends are
// throttled or commit with their response lost, queue calls fail, and deliveries
// arrive twice, early or late. Every run must complete with the right output,
// each step must be completed exactly once in the log, and each effect applied once.
func TestFaultsLoseNothing(t *testing.T) {
	t.Parallel()
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	base, faulty, client := chaosClient(ctx, t, chaos.Rates{
		AppendBefore: 0.05, AppendLost: 0.05, QueueBefore: 0.03,
		Duplicate: 0.2, Late: 0.1, LateBy: 150 * time.Millisecond, Early: 0.5,
	}, s)
	rec := newRecorder()
	wf := Order{rec: rec}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- client.Serve(serveCtx, workflow.Use(wf)) }()
	defer func() { stop(); <-served }()

	const runs = 16
	ids := make([]string, 0, runs)
	for i := range runs {
		id := fmt.Sprintf("chaos-%d-%d", s%100000, i)
		// A caller retries Start with a fixed run ID until it sticks, as it would
		// after a timeout; the run may already exist from an attempt whose
		// response was lost.
		for attempt := 0; ; attempt++ {
			_, err := workflow.Start(ctx, client, wf, i, workflow.WithRunID(id))
			if err == nil {
				break
			}
			if run, gerr := base.GetRun(ctx, id); gerr == nil && run.EventCount > 0 {
				// Created; make sure its first delivery exists (idempotent by ID).
				if _, qerr := base.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: worlds.WorkflowName[Order](), RunID: id}, worlds.QueueOptions{ID: "start-" + id}); qerr == nil {
					break
				}
			}
			if attempt > 50 {
				t.Fatalf("seed %d: start %s: %v", s, id, err)
			}
		}
		ids = append(ids, id)
	}

	settle := time.AfterFunc(30*time.Second, faulty.Disable) // let stragglers finish fault-free
	defer settle.Stop()
	for i, id := range ids {
		run, err := client.Wait(ctx, id)
		if err != nil {
			dump(t, base, id)
			t.Fatalf("seed %d: wait %s: %v", s, id, err)
		}
		if run.Status != worlds.RunCompleted {
			t.Fatalf("seed %d: run %s ended %s: %+v", s, id, run.Status, run.Error)
		}
		// reserve: i+1; charge, notify: i+2 each; ship: 2(i+2)+1
		if want := strconv.Itoa(2*(i+2) + 1); string(run.Output) != want {
			t.Fatalf("seed %d: run %s output %s, want %s", s, id, run.Output, want)
		}
		checkLog(t, s, base, id)
	}
	if got, want := rec.count(), runs*4; got != want {
		t.Fatalf("seed %d: %d distinct effects applied, want %d", s, got, want)
	}
	reruns := rec.reruns()
	c := faulty.Counts()
	t.Logf("runs=%d lost=0 faults=%d (append-before=%d append-lost=%d queue=%d dup=%d late=%d early=%d) step re-executions=%d",
		runs, c.Total(), c.AppendBefore, c.AppendLost, c.QueueBefore, c.Duplicate, c.Late, c.Early, reruns)
	if c.Total() == 0 {
		t.Fatalf("seed %d: no fault was injected; the test proved nothing", s)
	}
}

// checkLog asserts the log is contiguous and that each step, wait and the run
// completed exactly once.
func checkLog(t *testing.T, s uint64, w worlds.World, runID string) {
	t.Helper()
	events, err := worlds.AllEvents(context.Background(), w, runID)
	if err != nil {
		t.Fatal(err)
	}
	completed := map[string]int{}
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("seed %d: run %s event %d has seq %d: log not contiguous", s, runID, i, ev.Seq)
		}
		switch ev.Type {
		case worlds.EventStepCompleted, worlds.EventWaitCompleted:
			completed[ev.CorrelationID]++
		case worlds.EventRunCompleted:
			completed["run"]++
		}
	}
	if len(completed) != 6 { // 4 steps, 1 wait, the run
		t.Fatalf("seed %d: run %s completions %v, want 4 steps, 1 wait and the run", s, runID, completed)
	}
	for id, n := range completed {
		if n != 1 {
			t.Fatalf("seed %d: run %s: %s completed %d times", s, runID, id, n)
		}
	}
}

// dump logs a run's log and steps, to diagnose a run that did not finish.
func dump(t *testing.T, w worlds.World, runID string) {
	t.Helper()
	bg := context.Background()
	events, err := worlds.AllEvents(bg, w, runID)
	t.Logf("run %s log (err %v):", runID, err)
	for _, ev := range events {
		t.Logf("  %3d %-15s %-20s attempt=%d err=%v", ev.Seq, ev.Type, ev.CorrelationID, ev.Attempt, ev.Error)
	}
	steps, err := w.ListSteps(bg, runID, worlds.ListFilter{})
	for _, st := range steps.Items {
		t.Logf("  step %s %s %s attempt=%d retryAt=%v", st.StepID, st.StepName, st.Status, st.Attempt, st.RetryAt)
	}
	if err != nil {
		t.Logf("  steps: %v", err)
	}
}
