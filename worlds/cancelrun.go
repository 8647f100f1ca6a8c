package worlds

import (
	"context"
	"errors"
	"fmt"
)

// AttrCancelRequested is the run attribute that asks a running run to stop: its
// value is the reason. The workflow runtime hands the request to the run's code
// (the next blocking operation returns workflow.ErrCancelled), lets it clean up,
// and ends the run cancelled with run_cancelled.
const AttrCancelRequested = "cairn.cancel_requested"

// attrCancelReason is the attribute every cancel has written since before
// cancellation reached workflow code; readers of older runs look for it.
const attrCancelReason = "cancel_reason"

// RequestCancel cancels a run, the way every entry point does (workflow.Client,
// the RPC's runs.cancel, the web UI), and returns the run as it was before.
//
// A pending run, whose code has not run, ends cancelled at once. A running run
// gets a cancel request: the attribute [AttrCancelRequested] with the reason,
// and a workflow delivery that hands it to the run's code wherever its worker
// runs; the run ends cancelled once its code has cleaned up and returned. A run
// that starts at the instant it is cancelled is cancelled at once, as a pending
// one. Cancelling a finished run fails with the World's error, matching
// [ErrRunFinished]; a cancelled one is woken again all the same. If the
// delivery cannot be queued after the request is written, the error says so:
// cancelling again queues it, also when the run is cancelled by then.
func RequestCancel(ctx context.Context, w World, runID, reason string) (Run, error) {
	if reason == "" {
		reason = "cancelled"
	}
	if err := ValidateReason(reason); err != nil {
		return Run{}, err
	}
	run, err := w.GetRun(ctx, runID)
	if err != nil {
		return Run{}, err
	}
	if run.Status.Terminal() {
		refused := rejected(&Event{Type: EventRunCancelled, RunID: runID, Reason: reason}, ErrRunFinished, "run is "+string(run.Status))
		if run.Status == RunCancelled {
			// Wake it again: the wake-up of the call that cancelled it may have
			// failed, and the cancel's follow-up (its children cancelled, its
			// parent told, a continuation it created cancelled) happens in
			// that delivery. A spare one finds it all done.
			if _, err := w.Queue(ctx, QueueInput{Kind: DeliverWorkflow, WorkflowName: run.WorkflowName, RunID: runID}, QueueOptions{}); err != nil {
				return run, errors.Join(refused, fmt.Errorf("worlds: run %s: its worker not woken: %w", runID, err))
			}
		}
		return run, refused
	}
	attrs := map[string]string{attrCancelReason: reason}
	evs := []Event{{Type: EventAttributesSet, Attributes: attrs}}
	if run.Status == RunPending {
		evs = append(evs, Event{Type: EventRunCancelled, Reason: reason})
	} else {
		attrs[AttrCancelRequested] = reason
	}
	// A run that finished since is refused by Append, with the World's error.
	if _, err := w.Append(ctx, runID, evs...); err != nil {
		return run, err
	}
	if _, err := w.Queue(ctx, QueueInput{Kind: DeliverWorkflow, WorkflowName: run.WorkflowName, RunID: runID}, QueueOptions{}); err != nil {
		return run, fmt.Errorf("worlds: run %s: cancel requested but its worker not woken (cancel again to retry): %w", runID, err)
	}
	return run, nil
}
