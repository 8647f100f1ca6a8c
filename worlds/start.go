package worlds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// StartRun creates a run and queues its first delivery under the fixed ID
// start-<runID>, as every entry point that starts a run does (workflow.Start,
// the RPC's runs.start, the web UI). It is safe to retry: a
// start repeated with the same runID, workflow name and input (after a lost
// answer, or a queue failure once the run was created) returns the existing
// run, queued again under the same delivery ID while it has not started, which
// a World turns into one delivery (see [World.Queue]). Any other start of an
// existing runID fails with a *[StartConflictError], matching [ErrRunExists].
//
// On a World that implements [EagerStarter] the run's first delivery runs at
// once in this process where a worker is free, and the run's creation goes
// with that delivery's first write. Otherwise, on a World that implements
// [AppendQueuer], the run is created and queued in one write.
func StartRun(ctx context.Context, w World, runID, workflowName string, input json.RawMessage, attrs map[string]string) (Run, error) {
	created := Event{Type: EventRunCreated, WorkflowName: workflowName, Input: input, Attributes: attrs}
	in := QueueInput{Kind: DeliverWorkflow, WorkflowName: workflowName, RunID: runID}
	if es, ok := w.(EagerStarter); ok && runID != "" && workflowName != "" {
		started, err := es.StartEager(ctx, in, created)
		var arg *ArgumentError
		if errors.As(err, &arg) {
			return Run{}, err
		}
		if err != nil {
			return Run{}, fmt.Errorf("run %s: the outcome of its start is unknown (start it again with the same run ID and input): %w", runID, err)
		}
		if started {
			return w.GetRun(ctx, runID)
		}
	}
	opts := QueueOptions{ID: StartDeliveryID(runID)}
	var err error
	if aq, ok := w.(AppendQueuer); ok {
		if _, err = aq.AppendAndQueue(ctx, runID, []Event{created}, in, opts); err == nil {
			return w.GetRun(ctx, runID)
		}
	} else {
		_, err = w.Append(ctx, runID, created)
	}
	if errors.Is(err, ErrRunExists) {
		run, gerr := w.GetRun(ctx, runID)
		if gerr != nil {
			return Run{}, fmt.Errorf("run %s already exists and cannot be read to compare the start with it: %w", runID, gerr)
		}
		switch {
		case run.WorkflowName != workflowName:
			return Run{}, &StartConflictError{RunID: runID, Field: "workflowName", Existing: run.WorkflowName, Given: workflowName}
		case !sameJSON(run.Input, input):
			return Run{}, &StartConflictError{RunID: runID, Field: "input", Existing: string(run.Input), Given: string(input)}
		}
		if run.Status != RunPending {
			return run, nil
		}
	} else if err != nil {
		return Run{}, err
	}
	if _, err := w.Queue(ctx, in, opts); err != nil {
		return Run{}, fmt.Errorf("run %s created but its first delivery was not queued (start it again with the same run ID and input): %w", runID, err)
	}
	return w.GetRun(ctx, runID)
}

// StartDeliveryID is the ID a run's first delivery is queued under, so that
// every way of starting a run queues it once.
func StartDeliveryID(runID string) string { return "start-" + runID }

// sameJSON reports whether a and b hold the same JSON value; absent and null
// are the same.
func sameJSON(a, b json.RawMessage) bool {
	decode := func(raw json.RawMessage) (any, bool) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return nil, true
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// StartConflictError reports a start of a run ID that already belongs to a
// run started differently: another workflow, or another input. Retrying the
// same start is safe; this one cannot succeed under that run ID. It matches
// [ErrRunExists] and [ErrConflict].
type StartConflictError struct {
	RunID string
	// Field is what differs: "workflowName" or "input".
	Field string
	// Existing is the run's recorded value of Field, Given the start's.
	Existing, Given string
}

func (e *StartConflictError) Error() string {
	const max = 200
	clip := func(v string) string {
		if len(v) > max {
			return v[:max] + "..."
		}
		return v
	}
	return fmt.Sprintf("worlds: run %s already exists with %s %s, not %s: start it under another run ID",
		e.RunID, e.Field, clip(e.Existing), clip(e.Given))
}

// Is matches [ErrRunExists] and [ErrConflict].
func (e *StartConflictError) Is(target error) bool {
	return target == ErrRunExists || target == ErrConflict
}
