package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// eagerRunner runs the deliveries of its workflows ("wf" when names is nil)
// with fn.
type eagerRunner struct {
	names []string
	fn    func(ctx context.Context, w worlds.World, d worlds.Delivery) error
}

func (r eagerRunner) Workflows() []string {
	if r.names == nil {
		return []string{"wf"}
	}
	return r.names
}

func (r eagerRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	return r.fn(ctx, w, d)
}

func openEager(t *testing.T, cfg Config) *World {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "w.db")
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	w, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

type deliveryRow struct {
	claim      string
	attempt    int
	leaseUntil int64
}

// row reads a delivery's row; ok false when there is none.
func row(t *testing.T, w *World, id string) (deliveryRow, bool) {
	t.Helper()
	var r deliveryRow
	err := w.db.QueryRow(`SELECT claim, attempt, lease_until FROM deliveries WHERE id = ?`, id).Scan(&r.claim, &r.attempt, &r.leaseUntil)
	if err != nil {
		if strings.Contains(err.Error(), "no rows") {
			return r, false
		}
		t.Fatal(err)
	}
	return r, true
}

func eventTypes(t *testing.T, w worlds.World, runID string) []worlds.EventType {
	t.Helper()
	events, err := worlds.AllEvents(context.Background(), w, runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []worlds.EventType
	for _, ev := range events {
		out = append(out, ev.Type)
	}
	return out
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out", what)
		}
	}
}

func created(workflow string, input string) worlds.Event {
	return worlds.Event{Type: worlds.EventRunCreated, WorkflowName: workflow, Input: json.RawMessage(input)}
}

// startEagerly starts runID eagerly, retrying while the dispatcher holds the
// worker for the moment it takes to look for work.
func startEagerly(t *testing.T, w *World, runID string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		ok, err := w.StartEager(context.Background(), firstDelivery(runID), created("wf", `1`))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker was ever free to start %s eagerly", runID)
		}
	}
}

func firstDelivery(runID string) worlds.QueueInput {
	return worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: runID}
}

var (
	started     = worlds.Event{Type: worlds.EventRunStarted}
	stepCreated = worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "a"}
	stepStarted = worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1}
	stepDone    = worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s1", Output: json.RawMessage(`1`)}
	completed   = worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`1`)}
)

// TestEagerStartWritesTheRunWithItsFirstAppend: the run's first delivery runs
// before StartRun returns, against a World that answers for the run until its
// first append, which writes the creation with it; the delivery is written
// claimed, so no worker takes it, and it is finished as a claimed one is.
func TestEagerStartWritesTheRunWithItsFirstAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := openEager(t, Config{})
	release := make(chan struct{})
	var calls atomic.Int32
	var seen struct {
		run    worlds.Run
		events []worlds.Event
		err    error
	}
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
		calls.Add(1)
		if d.ID != "start-r" || d.Attempt != 1 {
			return fmt.Errorf("delivery %+v", d)
		}
		seen.run, seen.err = ew.GetRun(ctx, "r")
		if seen.err == nil {
			seen.events, seen.err = worlds.AllEvents(ctx, ew, "r")
		}
		if _, err := ew.Append(ctx, "r", started, stepCreated, stepStarted); err != nil {
			return err
		}
		<-release
		_, err := ew.Append(ctx, "r", stepDone, completed)
		return err
	}})

	run, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`{"n":1}`), map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if seen.err != nil {
		t.Fatal(seen.err)
	}
	if seen.run.Status != worlds.RunPending || seen.run.WorkflowName != "wf" || string(seen.run.Input) != `{"n":1}` || seen.run.Attributes["k"] != "v" {
		t.Errorf("the delivery read the run as %+v", seen.run)
	}
	if len(seen.events) != 1 || seen.events[0].Type != worlds.EventRunCreated || seen.events[0].Seq != 1 {
		t.Errorf("the delivery read the log as %+v", seen.events)
	}
	// Nobody ever saw the run pending: it was written already started.
	if run.Status != worlds.RunRunning || run.EventCount != 4 {
		t.Errorf("StartRun returned %+v, want the run running with 4 events", run)
	}
	events, err := worlds.AllEvents(ctx, w, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if !ev.CreatedAt.Equal(events[0].CreatedAt) {
			t.Errorf("event %d stamped %s, the creation %s: not one write", ev.Seq, ev.CreatedAt, events[0].CreatedAt)
		}
	}
	if !events[0].CreatedAt.Equal(seen.events[0].CreatedAt) {
		t.Errorf("creation stored at %s, the delivery read %s", events[0].CreatedAt, seen.events[0].CreatedAt)
	}
	r, ok := row(t, w, "start-r")
	if !ok || r.claim == "" || r.attempt != 1 || r.leaseUntil <= time.Now().UnixNano() {
		t.Errorf("start delivery row %+v (present %v), want it claimed, attempt 1, leased", r, ok)
	}
	close(release)
	eventually(t, "the delivery finishes", func() bool { _, ok := row(t, w, "start-r"); return !ok })
	got := eventTypes(t, w, "r")
	want := []worlds.EventType{worlds.EventRunCreated, worlds.EventRunStarted, worlds.EventStepCreated, worlds.EventStepStarted, worlds.EventStepCompleted, worlds.EventRunCompleted}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("log %v, want %v", got, want)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("runner called %d times, want 1", n)
	}
}

// TestEagerStartDeclines: with no Serve that can take the run at once,
// StartEager writes nothing and StartRun starts the run the usual way.
func TestEagerStartDeclines(t *testing.T) {
	t.Parallel()
	block := func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		if _, err := w.Append(ctx, d.Input.RunID, started); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	cases := []struct {
		name  string
		cfg   Config
		setup func(t *testing.T, w *World)
	}{
		{"no Serve", Config{}, func(*testing.T, *World) {}},
		{"another workflow", Config{}, func(t *testing.T, w *World) {
			ServeInTest(t, w, eagerRunner{names: []string{"other"}, fn: block})
		}},
		{"eager starts off", Config{NoEagerStart: true}, func(t *testing.T, w *World) {
			ServeInTest(t, w, eagerRunner{fn: block})
		}},
		{"Serve returned", Config{}, func(t *testing.T, w *World) {
			ServeInTest(t, w, eagerRunner{fn: block})()
		}},
		{"no free worker", Config{Workers: 1}, func(t *testing.T, w *World) {
			ServeInTest(t, w, eagerRunner{fn: block})
			startEagerly(t, w, "busy")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := openEager(t, tc.cfg)
			tc.setup(t, w)
			ok, err := w.StartEager(ctx, firstDelivery("r"), created("wf", `1`))
			if err != nil || ok {
				t.Fatalf("StartEager = %v, %v; want false, nil", ok, err)
			}
			if _, err := w.GetRun(ctx, "r"); !errors.Is(err, worlds.ErrRunNotFound) {
				t.Fatalf("after a declined eager start the run is there: %v", err)
			}
			if _, ok := row(t, w, "start-r"); ok {
				t.Fatal("a declined eager start queued a delivery")
			}
			if tc.name != "no Serve" {
				return
			}
			run, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`1`), nil)
			if err != nil || run.Status != worlds.RunPending {
				t.Fatalf("StartRun: %+v, %v", run, err)
			}
			if r, ok := row(t, w, "start-r"); !ok || r.claim != "" {
				t.Fatalf("the usual start's delivery %+v (present %v), want it queued unclaimed", r, ok)
			}
		})
	}
}

// TestEagerStartOfAnExistingRun: starting a run that exists fails the eager
// delivery's first write, which then ends without a trace, and StartRun
// answers as it does without eager starts.
func TestEagerStartOfAnExistingRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	var logMu sync.Mutex
	w := openEager(t, Config{Logger: slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))})
	if _, err := w.Append(ctx, "r", created("wf", `{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	var eagerErrs []error
	var mu sync.Mutex
	done := make(chan struct{})
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
		_, eager := ew.(*eagerWorld)
		_, err := ew.Append(ctx, "r", started, completed)
		if eager {
			mu.Lock()
			eagerErrs = append(eagerErrs, err)
			mu.Unlock()
		} else if err == nil {
			close(done)
		}
		return err
	}})
	var conflict *worlds.StartConflictError
	if _, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`{"n":2}`), nil); !errors.As(err, &conflict) || conflict.Field != "input" {
		t.Fatalf("start with another input: %v", err)
	}
	if got := eventTypes(t, w, "r"); len(got) != 1 {
		t.Fatalf("a refused start wrote %v", got)
	}
	if run, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`{"n":1}`), nil); err != nil || run.RunID != "r" {
		t.Fatalf("start again: %+v, %v", run, err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the usual delivery never ran")
	}
	eventually(t, "the delivery finishes", func() bool { _, ok := row(t, w, "start-r"); return !ok })
	want := []worlds.EventType{worlds.EventRunCreated, worlds.EventRunStarted, worlds.EventRunCompleted}
	if got := eventTypes(t, w, "r"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("log %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(eagerErrs) != 2 {
		t.Fatalf("eager deliveries %d, want 2", len(eagerErrs))
	}
	for _, err := range eagerErrs {
		if !errors.Is(err, worlds.ErrRunExists) {
			t.Errorf("eager delivery's append: %v, want ErrRunExists", err)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), "delivery failed") {
		t.Errorf("an abandoned eager start was logged as a failed delivery:\n%s", logs.String())
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestEagerStartOtherFirstWrites: a first write that is not an append writes
// the creation (and the claimed delivery) first; an AppendAndQueue goes with it.
func TestEagerStartOtherFirstWrites(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		first func(ctx context.Context, w worlds.World) error
		want  worlds.RunStatus
	}{
		{"WriteStream", func(ctx context.Context, w worlds.World) error {
			_, err := w.WriteStream(ctx, "r", "out", []byte("x"))
			return err
		}, worlds.RunPending},
		{"CloseStream", func(ctx context.Context, w worlds.World) error {
			return w.CloseStream(ctx, "r", "out")
		}, worlds.RunPending},
		{"Queue", func(ctx context.Context, w worlds.World) error {
			_, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}, worlds.QueueOptions{ID: "later", DueAt: time.Now().Add(time.Hour)})
			return err
		}, worlds.RunPending},
		{"AppendAndQueue", func(ctx context.Context, w worlds.World) error {
			_, err := w.(worlds.AppendQueuer).AppendAndQueue(ctx, "r", []worlds.Event{started},
				worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}, worlds.QueueOptions{ID: "later", DueAt: time.Now().Add(time.Hour)})
			return err
		}, worlds.RunRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := openEager(t, Config{})
			release := make(chan struct{})
			firstDone := make(chan error, 1)
			ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
				err := tc.first(ctx, ew)
				firstDone <- err
				if err != nil {
					return err
				}
				<-release
				return nil
			}})
			run, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`1`), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-firstDone; err != nil {
				t.Fatal(err)
			}
			if run.Status != tc.want {
				t.Errorf("run %s, want %s", run.Status, tc.want)
			}
			if r, ok := row(t, w, "start-r"); !ok || r.claim == "" {
				t.Errorf("start delivery %+v (present %v), want it claimed", r, ok)
			}
			if strings.Contains(tc.name, "Queue") {
				if r, ok := row(t, w, "later"); !ok || r.claim != "" {
					t.Errorf("queued delivery %+v (present %v)", r, ok)
				}
			}
			close(release)
			eventually(t, "the delivery finishes", func() bool { _, ok := row(t, w, "start-r"); return !ok })
		})
	}
}

// TestEagerStartRunnerIgnoringItsWorld: a runner that reads the World it was
// built with instead of the one it is given finds no run; the start then goes
// the usual way.
func TestEagerStartRunnerIgnoringItsWorld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := openEager(t, Config{})
	var calls atomic.Int32
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
		calls.Add(1)
		if _, err := w.GetRun(ctx, "r"); errors.Is(err, worlds.ErrRunNotFound) {
			return nil // as the workflow runtime acknowledges a delivery of an unknown run
		}
		_, err := w.Append(ctx, "r", started, completed)
		return err
	}})
	run, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`1`), nil)
	if err != nil || run.RunID != "r" {
		t.Fatalf("StartRun: %+v, %v", run, err)
	}
	eventually(t, "the run completes", func() bool {
		run, err := w.GetRun(ctx, "r")
		return err == nil && run.Status == worlds.RunCompleted
	})
	if n := calls.Load(); n != 2 {
		t.Errorf("runner called %d times, want 2 (the eager start, then the queued delivery)", n)
	}
}

// TestEagerDeliveryFailureIsRetried: an eager delivery that fails after it
// wrote its run is retried, as a claimed delivery is.
func TestEagerDeliveryFailureIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := openEager(t, Config{})
	attempts := make(chan int, 4)
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
		attempts <- d.Attempt
		if d.Attempt == 1 {
			if _, err := ew.Append(ctx, "r", started); err != nil {
				return err
			}
			return errors.New("failed after the first write")
		}
		_, err := ew.Append(ctx, "r", completed)
		return err
	}})
	if _, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`1`), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{1, 2} {
		select {
		case got := <-attempts:
			if got != want {
				t.Fatalf("attempt %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("attempt %d never came", want)
		}
	}
	eventually(t, "the run completes", func() bool {
		run, err := w.GetRun(ctx, "r")
		return err == nil && run.Status == worlds.RunCompleted
	})
}

// TestEagerStartsUnderLoad: many starts at once on few workers each write
// their run once, whether eager or not, and every delivery is finished.
func TestEagerStartsUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := openEager(t, Config{Workers: 3})
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
		_, err := ew.Append(ctx, d.Input.RunID, started, completed)
		return err
	}})
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := worlds.StartRun(ctx, w, fmt.Sprintf("r%d", i), "wf", json.RawMessage(`1`), nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprint([]worlds.EventType{worlds.EventRunCreated, worlds.EventRunStarted, worlds.EventRunCompleted})
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		eventually(t, id+" completes", func() bool {
			run, err := w.GetRun(ctx, id)
			return err == nil && run.Status == worlds.RunCompleted
		})
		if got := fmt.Sprint(eventTypes(t, w, id)); got != want {
			t.Errorf("%s: log %s, want %s", id, got, want)
		}
	}
	eventually(t, "every delivery finishes", func() bool { n, err := w.pendingDeliveries(ctx); return err == nil && n == 0 })
}

const eagerCrashEnv = "CAIRN_LOCAL_EAGER_CRASH_CHILD"

// TestKilledEagerStartResumes kills a process (SIGKILL) while its eager start's
// delivery runs a step: the run and the step's start are in the file, and the
// delivery comes back to another process, as a redelivery, once its lease ends.
func TestKilledEagerStartResumes(t *testing.T) {
	if os.Getenv(eagerCrashEnv) != "" {
		t.Skip("child side runs in TestEagerCrashChild")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crash.db")
	killedAt := KillChildWhen(t, "TestEagerCrashChild", eagerCrashEnv, path, "child: running eagerly")

	ExpectRedelivery(t, openEager(t, Config{Path: path}), "s1", "start-r", killedAt)
}

// TestEagerCrashChild is the process TestKilledEagerStartResumes kills.
func TestEagerCrashChild(t *testing.T) {
	path := os.Getenv(eagerCrashEnv)
	if path == "" {
		t.Skip("only run by TestKilledEagerStartResumes")
	}
	ctx := context.Background()
	w, err := Open(ctx, Config{Path: path, Lease: 500 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
		if _, eager := ew.(*eagerWorld); !eager {
			return errors.New("not an eager delivery")
		}
		if _, err := ew.Append(ctx, "r", started, stepCreated, stepStarted); err != nil {
			return err
		}
		fmt.Println("child: running eagerly")
		select {} // killed here
	}})
	if _, err := worlds.StartRun(ctx, w, "r", "wf", json.RawMessage(`1`), nil); err != nil {
		t.Fatal(err)
	}
	select {}
}

// TestEagerStartRefusesBadArguments: a delivery that cannot be a run's first
// is an *ArgumentError naming the field, and nothing is written.
func TestEagerStartRefusesBadArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := openEager(t, Config{})
	ServeInTest(t, w, eagerRunner{fn: func(context.Context, worlds.World, worlds.Delivery) error { return nil }})
	step := firstDelivery("r")
	step.Kind, step.StepID = worlds.DeliverStep, "s1"
	other := firstDelivery("r")
	other.WorkflowName = "other"
	cases := []struct {
		name    string
		in      worlds.QueueInput
		created worlds.Event
		field   string
	}{
		{"no run ID", worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf"}, created("wf", `1`), "QueueInput.RunID"},
		{"step delivery", step, created("wf", `1`), "QueueInput.Kind"},
		{"not run_created", firstDelivery("r"), started, "Event.Type"},
		{"another workflow", other, created("wf", `1`), "QueueInput.WorkflowName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := w.StartEager(ctx, tc.in, tc.created)
			var arg *worlds.ArgumentError
			if ok || !errors.As(err, &arg) || arg.Field != tc.field {
				t.Fatalf("StartEager = %v, %v; want an *ArgumentError for %s", ok, err, tc.field)
			}
			if _, err := w.GetRun(ctx, "r"); !errors.Is(err, worlds.ErrRunNotFound) {
				t.Fatalf("a refused eager start wrote the run: %v", err)
			}
		})
	}
}

// TestWorkerFreedWhenTheRunEnds: a delivery gives back its worker as its run's
// end commits, so with one worker a run started by a waiter that saw the end
// starts eagerly while the delivery that ended the first run is still busy.
func TestWorkerFreedWhenTheRunEnds(t *testing.T) {
	t.Parallel()
	for _, eager := range []bool{true, false} {
		t.Run(fmt.Sprintf("eager=%v", eager), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := openEager(t, Config{Workers: 1})
			hold := make(chan struct{})
			defer close(hold)
			runner := eagerRunner{fn: func(ctx context.Context, ew worlds.World, d worlds.Delivery) error {
				if _, err := ew.Append(ctx, d.Input.RunID, started, completed); err != nil {
					return err
				}
				if d.Input.RunID == "a" {
					<-hold // bookkeeping after the end
				}
				return nil
			}}
			ended, stop := w.SubscribeRun("a")
			defer stop()
			if eager {
				ServeInTest(t, w, runner)
				startEagerly(t, w, "a")
			} else {
				if _, err := worlds.StartRun(ctx, w, "a", "wf", json.RawMessage(`1`), nil); err != nil {
					t.Fatal(err)
				}
				ServeInTest(t, w, runner)
			}
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("run a never ended")
			}
			startEagerly(t, w, "b") // the worker a's delivery still runs on
		})
	}
}
