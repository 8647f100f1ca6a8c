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
// start-<runID>: the two writes every entry point that starts a run makes
// (workflow.Start, the RPC's runs.start, the web UI). It is safe to retry: a
// start repeated with the same runID, workflow name and input (after a lost
// answer, or a queue failure once the run was created) returns the existing
// run, queued again while it has not started. Any other start of an existing
// runID fails with the World's error, matching [ErrRunExists].
func StartRun(ctx context.Context, w World, runID, workflowName string, input json.RawMessage, attrs map[string]string) (Run, error) {
	_, err := w.Append(ctx, runID, Event{Type: EventRunCreated, WorkflowName: workflowName, Input: input, Attributes: attrs})
	if errors.Is(err, ErrRunExists) {
		run, gerr := w.GetRun(ctx, runID)
		if gerr != nil || run.WorkflowName != workflowName || !sameJSON(run.Input, input) {
			return Run{}, err
		}
		if run.Status != RunPending {
			return run, nil
		}
	} else if err != nil {
		return Run{}, err
	}
	in := QueueInput{Kind: DeliverWorkflow, WorkflowName: workflowName, RunID: runID}
	if _, err := w.Queue(ctx, in, QueueOptions{ID: "start-" + runID}); err != nil {
		return Run{}, fmt.Errorf("run %s created but its first delivery was not queued (start it again with the same run ID and input): %w", runID, err)
	}
	return w.GetRun(ctx, runID)
}

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
