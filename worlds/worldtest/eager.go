package worldtest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// eagerRunner runs the "worldtest" workflow's deliveries with fn, counting
// them by delivery ID.
type eagerRunner struct {
	fn    func(ctx context.Context, w worlds.World, d worlds.Delivery) error
	mu    sync.Mutex
	count map[string]int
}

func (r *eagerRunner) Workflows() []string { return []string{"worldtest"} }

func (r *eagerRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	r.mu.Lock()
	if r.count == nil {
		r.count = map[string]int{}
	}
	r.count[d.ID]++
	r.mu.Unlock()
	return r.fn(ctx, w, d)
}

func (r *eagerRunner) runs(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[id]
}

// startEagerly calls StartEager until it starts the run: a World may decline
// while its Serve is starting or its workers are busy for a moment.
func (s *suite) startEagerly(t *testing.T, es worlds.EagerStarter, in worlds.QueueInput, created worlds.Event) {
	t.Helper()
	for deadline := time.Now().Add(s.opts.timeout); ; time.Sleep(5 * time.Millisecond) {
		ok, err := es.StartEager(ctx(t), in, created)
		if err != nil {
			t.Fatalf("StartEager: %v", err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("StartEager declined every time: no worker was ever free")
		}
	}
}

// eagerStart checks a [worlds.EagerStarter]: the run's first delivery runs
// before StartEager returns, reads the run as just created, and its first
// append is written with the creation, so no reader sees the run pending; the
// delivery runs once (it is claimed); a start of an existing run writes
// nothing and its delivery's append fails with ErrRunExists; a delivery that
// cannot be a run's first is an *ArgumentError.
func (s *suite) eagerStart(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var firstRead worlds.Run
	var readErr, existsErr error
	r := &eagerRunner{fn: func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		runID := d.Input.RunID
		if d.Attempt == 1 && d.ID == worlds.StartDeliveryID(runID) {
			run, err := w.GetRun(ctx, runID)
			mu.Lock()
			if err == nil && run.Status == worlds.RunPending {
				firstRead = run
			} else if err != nil {
				readErr = err
			}
			mu.Unlock()
		}
		_, err := w.Append(ctx, runID, worlds.Event{Type: worlds.EventRunStarted})
		if errors.Is(err, worlds.ErrRunExists) {
			mu.Lock()
			existsErr = err
			mu.Unlock()
			return err
		}
		if err != nil {
			return err
		}
		<-release
		_, err = w.Append(ctx, runID, worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`1`)})
		return err
	}}
	w := s.serve(t, r)
	es, ok := w.(worlds.EagerStarter)
	if !ok {
		t.Skip("World is not a worlds.EagerStarter")
	}
	c := ctx(t)
	runID := uid(t, "run")
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "worldtest", RunID: runID}
	created := worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "worldtest", Input: json.RawMessage(`{"n":1}`)}
	s.startEagerly(t, es, in, created)
	run, err := w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != worlds.RunRunning || run.EventCount != 2 {
		t.Errorf("after StartEager the run is %s with %d events, want running with 2: the creation and the first append in one write", run.Status, run.EventCount)
	}
	mu.Lock()
	if readErr != nil || firstRead.RunID != runID || string(firstRead.Input) != `{"n":1}` {
		t.Errorf("the delivery read the run as %+v (%v), want it as created", firstRead, readErr)
	}
	mu.Unlock()
	close(release)
	s.waitForRun(t, w, runID, worlds.RunCompleted)
	time.Sleep(100 * time.Millisecond) // a second delivery of a claimed start would come now
	if n := r.runs(worlds.StartDeliveryID(runID)); n != 1 {
		t.Errorf("the eager start's delivery ran %d times, want once", n)
	}

	existing := uid(t, "run")
	if _, err := w.Append(c, existing, created); err != nil {
		t.Fatal(err)
	}
	in.RunID = existing
	for deadline := time.Now().Add(s.opts.timeout); ; time.Sleep(5 * time.Millisecond) {
		if ok, err := es.StartEager(c, in, created); err != nil || ok {
			t.Fatalf("StartEager of an existing run = %v, %v; want false, nil", ok, err)
		}
		mu.Lock()
		tried := existsErr != nil
		mu.Unlock()
		if tried {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("StartEager of an existing run never ran its delivery")
		}
	}
	if got, err := w.GetRun(c, existing); err != nil || got.Status != worlds.RunPending || got.EventCount != 1 {
		t.Errorf("an eager start of an existing run changed it: %+v, %v", got, err)
	}

	step := worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: "worldtest", RunID: uid(t, "run"), StepID: "s1"}
	var arg *worlds.ArgumentError
	if ok, err := es.StartEager(c, step, created); ok || !errors.As(err, &arg) {
		t.Errorf("StartEager of a step delivery = %v, %v; want an *ArgumentError", ok, err)
	}
}

// waitForRun waits until the run has status want.
func (s *suite) waitForRun(t *testing.T, w worlds.World, runID string, want worlds.RunStatus) {
	t.Helper()
	for deadline := time.Now().Add(s.opts.timeout); ; time.Sleep(10 * time.Millisecond) {
		run, err := w.GetRun(ctx(t), runID)
		if err == nil && run.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %+v, %v; timed out waiting for %s", runID, run, err, want)
		}
	}
}
