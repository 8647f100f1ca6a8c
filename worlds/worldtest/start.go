package worldtest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// startRetried checks the start contract [worlds.StartRun] builds on the World:
// the same start repeated returns the one run, and a different start of the
// same run ID is a *worlds.StartConflictError naming what differs, matching
// ErrRunExists and ErrConflict, so callers can tell a safe retry from a clash.
func (s *suite) startRetried(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID := uid(t, "run")
	wf := uid(t, "wf")
	input := json.RawMessage(`{"subject":"release 1.2","n":1}`)
	first, err := worlds.StartRun(c, w, runID, wf, input, nil)
	if err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	// Key order and spacing are not part of the input's value.
	again, err := worlds.StartRun(c, w, runID, wf, json.RawMessage(`{ "n": 1, "subject": "release 1.2" }`), nil)
	if err != nil {
		t.Fatalf("StartRun retried with the same input: %v", err)
	}
	if again.RunID != first.RunID || !again.CreatedAt.Equal(first.CreatedAt) || again.WorkflowName != wf {
		t.Errorf("retried StartRun = %+v, want the run first started, %+v", again, first)
	}
	for _, tc := range []struct {
		name, workflow, field string
		input                 json.RawMessage
	}{
		{"other input", wf, "input", json.RawMessage(`{"subject":"release 1.3","n":1}`)},
		{"no input", wf, "input", nil},
		{"other workflow", wf + "-other", "workflowName", input},
	} {
		_, err := worlds.StartRun(c, w, runID, tc.workflow, tc.input, nil)
		var sce *worlds.StartConflictError
		if !errors.As(err, &sce) || sce.Field != tc.field || sce.RunID != runID {
			t.Errorf("%s: StartRun = %v, want a *worlds.StartConflictError on %s", tc.name, err, tc.field)
			continue
		}
		if !errors.Is(err, worlds.ErrRunExists) || !errors.Is(err, worlds.ErrConflict) || errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("%s: %v must match ErrRunExists and ErrConflict only", tc.name, err)
		}
	}
	evs, err := w.ListEvents(c, runID, worlds.EventFilter{})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Type != worlds.EventRunCreated {
		t.Errorf("events after the retries and conflicts = %+v, %v; want the one run_created", evs.Items, err)
	}
}

// appendQueue checks a World that implements [worlds.AppendQueuer]: the events
// and the delivery are written together, and a refused append or an invalid
// delivery writes neither. Other Worlds skip it.
func (s *suite) appendQueue(t *testing.T) {
	if _, ok := s.shared.(worlds.AppendQueuer); !ok {
		t.Skip("the World does not implement worlds.AppendQueuer")
	}
	r := newRecorder(s.now)
	w := s.serve(t, r)
	aq := w.(worlds.AppendQueuer)
	c := ctx(t)
	runID := uid(t, "run")
	created := worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "worldtest"}
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "worldtest", RunID: runID}

	// An invalid delivery appends nothing.
	if _, err := aq.AppendAndQueue(c, runID, []worlds.Event{created}, worlds.QueueInput{Kind: "bogus", RunID: runID}, worlds.QueueOptions{}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("AppendAndQueue with an invalid delivery = %v, want ErrInvalidArgument", err)
	}
	if _, err := w.GetRun(c, runID); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Fatalf("after a refused delivery, GetRun = %v, want ErrRunNotFound", err)
	}

	first := uid(t, "first")
	stored, err := aq.AppendAndQueue(c, runID, []worlds.Event{created}, in, worlds.QueueOptions{ID: first})
	if err != nil || len(stored) != 1 || stored[0].Seq != 1 || stored[0].Type != worlds.EventRunCreated {
		t.Fatalf("AppendAndQueue = %+v, %v; want run_created stored as event 1", stored, err)
	}
	// A refused append queues nothing.
	refused := uid(t, "refused")
	if _, err := aq.AppendAndQueue(c, runID, []worlds.Event{created}, in, worlds.QueueOptions{ID: refused}); !errors.Is(err, worlds.ErrRunExists) {
		t.Fatalf("AppendAndQueue of a second run_created = %v, want ErrRunExists", err)
	}
	marker, err := w.Queue(c, in, worlds.QueueOptions{DueAt: s.now().Add(200 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, r, "the queued delivery and the marker", func() bool { return len(r.byID(first)) > 0 && len(r.byID(marker)) > 0 })
	if got := r.byID(first); len(got) != 1 || got[0].d.Input.RunID != runID || got[0].d.Input.Kind != in.Kind {
		t.Errorf("delivery queued with the events received %+v, want once with %+v", got, in)
	}
	if got := r.byID(refused); len(got) != 0 {
		t.Errorf("the delivery of a refused append was delivered %d times", len(got))
	}
}
