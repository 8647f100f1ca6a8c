package workflow

import (
	"context"
	"errors"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// replay reads the run and its whole log, appends completed waits when due, and
// runs the workflow from the start until it parks or ends. done means the
// delivery is over with err. A pending run's run_started is not appended here
// but returned in head, to go with the first write the code reaches; the
// execution's history holds it already.
func (e *engine) replay(ctx context.Context, d worlds.Delivery, f flow, info *Info, rearm, requeue bool) (_ context.Context, x *execution, head []worlds.Event, done bool, err error) {
	runID := d.Input.RunID
	for {
		run, err := e.world.GetRun(ctx, runID)
		if errors.Is(err, worlds.ErrRunNotFound) {
			e.log.WarnContext(ctx, "delivery for unknown run acknowledged", "run_id", runID)
			return ctx, nil, nil, true, nil
		}
		if err != nil {
			return ctx, nil, nil, true, err
		}
		if run.Status.Terminal() {
			switch {
			case run.Status == worlds.RunCancelled:
				// A run cancelled through the World rather than a Client (the RPC's
				// runs.cancel, a UI over a World) is woken once after it: its children
				// are cancelled and its parent told here, whatever cancelled it. After
				// a Client's cancel, this finds everything done already.
				return ctx, nil, nil, true, e.cancelLinks(ctx, run)
			case d.Attempt > 1:
				// The delivery that ended the run may have failed after the end, before
				// its parent heard of it or its continuation was queued.
				return ctx, nil, nil, true, errors.Join(e.continued(ctx, run), e.notifyParent(ctx, run))
			}
			return ctx, nil, nil, true, nil
		}
		if worlds.ResetIncomplete(run) {
			// A reset is still copying the history in: the reset queues the run's
			// start once it is whole, and that delivery sees what this one would.
			return ctx, nil, nil, true, nil
		}
		events, err := worlds.AllEvents(ctx, e.world, runID)
		if err != nil {
			return ctx, nil, nil, true, err
		}
		*info = Info{RunID: runID, WorkflowName: run.WorkflowName}
		hist := buildHistory(run, events)
		extra := hist.dueWaits(e.clock())
		if rearm {
			if err := e.rearmEarlyWake(ctx, d, hist); err != nil {
				return ctx, nil, nil, true, err
			}
			rearm = false
		}
		if len(extra) > 0 {
			stored, err := e.world.Append(ctx, runID, extra...)
			switch {
			case errors.Is(err, worlds.ErrConflict):
				requeue = true
				continue // a concurrent delivery got there first
			case errors.Is(err, worlds.ErrTooEarly):
				// The World's clock says a wait is not due yet: try again shortly.
				return ctx, nil, nil, true, e.queueWorkflow(ctx, run.WorkflowName, runID, e.clock().Add(time.Second), "")
			case errors.Is(err, worlds.ErrGone):
				return ctx, nil, nil, true, nil
			case err != nil:
				return ctx, nil, nil, true, err
			}
			hist.apply(stored)
		}
		if requeue {
			// This delivery ran before and may have died between an append and its
			// queueing, or in a step it ran inline; or it lost a race to a
			// concurrent delivery that may still die there: queue the deliveries of
			// pending operations again. If that fails too, the delivery must fail,
			// or the operations are never run.
			if err := e.requeuePending(ctx, hist, d); err != nil {
				return ctx, nil, nil, true, err
			}
		}
		stored := hist.seq
		if run.Blocked != nil {
			// The code failed before; if it gets past that now, say so with its
			// first write (blockRun drops this when it fails again).
			head = []worlds.Event{{Type: worlds.EventRunUnblocked}}
		}
		if run.Status == worlds.RunPending {
			head = append([]worlds.Event{{Type: worlds.EventRunStarted}}, head...)
			hist.run.Status = worlds.RunRunning
			hist.apply([]worlds.Event{{Type: worlds.EventRunStarted, RunID: runID, Seq: hist.seq + 1, CreatedAt: e.clock().UTC()}})
			ctx = e.obs.RunStarted(ctx, *info)
		}
		x = newExecution(e, e.world, hist, modeAdvance, "")
		x.stored = stored
		x.run(withInfo(ctx, *info), f)
		return ctx, x, head, false, nil
	}
}
