package worldtest

import (
	"encoding/json"
	"errors"
	"testing"

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
