package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// queueCreated queues what newly created operations need: a step delivery per step,
// a wake-up at each timer's resume time, and an immediate replay when a hook's
// token was taken so the conflict surfaces.
func (e *engine) queueCreated(ctx context.Context, wf, runID string, stored []worlds.Event) error {
	var errs []error
	for _, ev := range stored {
		switch ev.Type {
		case worlds.EventStepCreated:
			errs = append(errs, e.queueStep(ctx, wf, runID, ev.CorrelationID, time.Time{}))
		case worlds.EventWaitCreated:
			errs = append(errs, e.queueWorkflow(ctx, wf, runID, *ev.ResumeAt, wakeID(runID, ev.CorrelationID)))
		case worlds.EventHookConflict:
			errs = append(errs, e.queueWorkflow(ctx, wf, runID, time.Time{}, ""))
		}
	}
	return errors.Join(errs...)
}

// cancelWakes withdraws the wake-ups of the timers whose cancellation is in
// stored, on Worlds that can. It is best effort: a wake-up that still arrives
// finds its wait completed and nothing to do.
func (e *engine) cancelWakes(ctx context.Context, runID string, stored []worlds.Event) {
	dc, ok := e.world.(worlds.DeliveryCanceller)
	if !ok {
		return
	}
	for _, ev := range stored {
		if ev.Type == worlds.EventWaitCompleted && ev.Reason == worlds.WaitCancelled {
			if err := dc.CancelDelivery(ctx, wakeID(runID, ev.CorrelationID)); err != nil {
				e.log.WarnContext(ctx, "withdrawing a cancelled timer's wake-up; it finds nothing to do when due", "run_id", runID, "wait_id", ev.CorrelationID, "error", err)
			}
		}
	}
}

// wakeID is the fixed delivery ID of the wake-up of wait waitID.
func wakeID(runID, waitID string) string { return "wake-" + runID + "-" + waitID }

// rearmEarlyWake queues a timer's wake-up again when it arrived before its wait
// is due (a queue or scheduler that fires early, a clock skewed between
// machines): acknowledging it would leave the run asleep for ever, since nothing
// else wakes it.
func (e *engine) rearmEarlyWake(ctx context.Context, d worlds.Delivery, h *history) error {
	prefix := wakeID(h.run.RunID, "")
	if !strings.HasPrefix(d.ID, prefix) {
		return nil
	}
	now := e.clock()
	for _, r := range h.waiting {
		if r.done != nil || r.created.ResumeAt == nil || wakeID(h.run.RunID, r.id) != d.ID {
			continue
		}
		if now.Before(*r.created.ResumeAt) {
			return e.queueWorkflow(ctx, h.run.WorkflowName, h.run.RunID, *r.created.ResumeAt, d.ID)
		}
	}
	return nil
}

func (e *engine) requeuePending(ctx context.Context, h *history, d worlds.Delivery) error {
	var errs []error
	for pos := 1; pos <= h.maxPos; pos++ {
		r := h.byPos[pos]
		if r == nil || r.done != nil {
			continue
		}
		switch {
		case r.kind == opStep && (r.attempts == 0 || blockedRetry(d)):
			// (A blocked run's step deliveries were acknowledged unrun while its
			// code failed; a step delivery is idempotent, so queue them all.)
			errs = append(errs, e.queueStep(ctx, h.run.WorkflowName, h.run.RunID, r.id, time.Time{}))
		case r.kind == opStep && d.Attempt > 1 && r.started != nil && r.started.DeliveryID == d.ID:
			// An earlier run of this very delivery started the attempt inline and
			// died or failed before its outcome: queue the next attempt. (A retry
			// it recorded instead is queued again at its time.)
			_, err := e.world.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: h.run.WorkflowName,
				RunID: h.run.RunID, StepID: r.id, Attempt: r.attempts + 1}, worlds.QueueOptions{})
			errs = append(errs, err)
		case r.kind == opWait:
			errs = append(errs, e.queueWorkflow(ctx, h.run.WorkflowName, h.run.RunID, *r.created.ResumeAt, wakeID(h.run.RunID, r.id)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workflow: run %s: re-queueing pending operations: %w", h.run.RunID, err)
	}
	return nil
}

func (e *engine) queueWorkflow(ctx context.Context, wf, runID string, due time.Time, id string) error {
	_, err := e.world.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: wf, RunID: runID},
		worlds.QueueOptions{DueAt: due, ID: id})
	return err
}

func (e *engine) queueStep(ctx context.Context, wf, runID, stepID string, due time.Time) error {
	_, err := e.world.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: wf, RunID: runID, StepID: stepID},
		worlds.QueueOptions{DueAt: due})
	return err
}
