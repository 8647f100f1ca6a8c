package worldtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// signals checks [worlds.SendSignal] on the World: a pending run accepts
// signals, they are stored in the order sent with their names and payloads, a
// signal wakes the run with one delivery under [worlds.SignalWakeID], a signal
// sent again with its ID is stored once, an
// unknown run is ErrRunNotFound and an ended one ErrRunFinished.
func (s *suite) signals(t *testing.T) {
	r := newRecorder(s.now)
	w := s.serve(t, r)
	c := ctx(t)
	runID := uid(t, "run")
	if _, err := w.Append(c, runID, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "worldtest"}); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "a"} {
		if err := worlds.SendSignal(c, w, runID, name, json.RawMessage(fmt.Sprint(i))); err != nil {
			t.Fatalf("SendSignal %s to a pending run: %v", name, err)
		}
	}
	// A signal sent again under its ID is not appended again; the same ID
	// under another name is another signal.
	for range 2 {
		if err := worlds.SendSignal(c, w, runID, "a", json.RawMessage(`3`), worlds.WithSignalID("msg-1")); err != nil {
			t.Fatalf("SendSignal with an ID: %v", err)
		}
	}
	if err := worlds.SendSignal(c, w, runID, "b", json.RawMessage(`4`), worlds.WithSignalID("msg-1")); err != nil {
		t.Fatal(err)
	}
	evs, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs[1:] {
		got = append(got, fmt.Sprintf("%s:%s:%s", ev.Type, ev.CorrelationID, ev.Payload))
	}
	if want := "[signal_received:a:0 signal_received:b:1 signal_received:a:2 signal_received:a:3 signal_received:b:4]"; fmt.Sprint(got) != want {
		t.Fatalf("log after three signals = %v, want %s", got, want)
	}
	s.waitFor(t, r, "the signal's wake-up", func() bool { return len(r.byID(worlds.SignalWakeID(runID))) > 0 })
	if got := r.byID(worlds.SignalWakeID(runID)); got[0].d.Input.RunID != runID || got[0].d.Input.Kind != worlds.DeliverWorkflow {
		t.Errorf("wake-up delivery %+v, want a workflow delivery of %s", got[0].d, runID)
	}
	if err := worlds.SendSignal(c, w, uid(t, "none"), "a", nil); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Errorf("SendSignal to an unknown run = %v, want ErrRunNotFound", err)
	}
	if _, err := w.Append(c, runID, worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventRunCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := worlds.SendSignal(c, w, runID, "a", nil); !errors.Is(err, worlds.ErrRunFinished) {
		t.Errorf("SendSignal to an ended run = %v, want ErrRunFinished", err)
	}
	// Straight to Append, a signal to an ended run is refused the same way.
	if _, err := w.Append(c, runID, worlds.Event{Type: worlds.EventSignalReceived, CorrelationID: "a"}); !errors.Is(err, worlds.ErrRunFinished) {
		t.Errorf("Append of a signal to an ended run = %v, want ErrRunFinished", err)
	}
}

// signalWithStart checks [worlds.SignalWithStart] racing on one run ID: one
// run is created, its first event after run_created is a signal, and every
// caller's signal is in its log.
func (s *suite) signalWithStart(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID := uid(t, "run")
	const callers = 5
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := worlds.SignalWithStart(c, w, runID, "worldtest", json.RawMessage(`{"n":1}`), nil, "go", json.RawMessage(fmt.Sprint(i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SignalWithStart: %v", err)
		}
	}
	evs, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	created, signals := 0, map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case worlds.EventRunCreated:
			created++
		case worlds.EventSignalReceived:
			signals[string(ev.Payload)] = true
		}
	}
	if created != 1 || len(signals) != callers || evs[1].Type != worlds.EventSignalReceived {
		t.Fatalf("after %d racing calls: %d run_created, signals %v, log %+v; want one run with every signal, the first right after its creation", callers, created, signals, evs)
	}
	var sce *worlds.StartConflictError
	if _, err := worlds.SignalWithStart(c, w, runID, "other", nil, nil, "go", nil); !errors.As(err, &sce) || sce.Field != "workflowName" {
		t.Errorf("SignalWithStart naming another workflow = %v, want a StartConflictError on workflowName", err)
	}
}
