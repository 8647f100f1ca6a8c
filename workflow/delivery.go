package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// maxAdvanceRounds bounds how often one delivery re-reads the log after losing a
// race with a concurrent delivery of the same run.
const maxAdvanceRounds = 8

// recordTimeout bounds recording a finished step attempt after its delivery's
// context ended.
const recordTimeout = 10 * time.Second

// advance handles a DeliverWorkflow delivery: it replays the workflow against the
// log and appends what the code reached next, or the run's end.
func (e *engine) advance(ctx context.Context, d worlds.Delivery, f flow) error {
	runID := d.Input.RunID
	raced := false // lost an append to a concurrent delivery
	inlined := 0   // steps run inline by this delivery
	for round := 0; round < maxAdvanceRounds; round++ {
		run, err := e.world.GetRun(ctx, runID)
		if errors.Is(err, worlds.ErrRunNotFound) {
			e.log.WarnContext(ctx, "delivery for unknown run acknowledged", "run_id", runID)
			return nil
		}
		if err != nil {
			return err
		}
		if run.Status.Terminal() {
			return nil
		}
		events, err := worlds.AllEvents(ctx, e.world, runID)
		if err != nil {
			return err
		}
		info := Info{RunID: runID, WorkflowName: run.WorkflowName}
		var extra []worlds.Event
		if run.Status == worlds.RunPending {
			extra = append(extra, worlds.Event{Type: worlds.EventRunStarted})
		}
		hist := buildHistory(run, events)
		extra = append(extra, hist.dueWaits(e.clock())...)
		if round == 0 && inlined == 0 {
			if err := e.rearmEarlyWake(ctx, d, hist); err != nil {
				return err
			}
		}
		if len(extra) > 0 {
			stored, err := e.world.Append(ctx, runID, extra...)
			switch {
			case errors.Is(err, worlds.ErrConflict):
				raced = true
				continue // a concurrent delivery got there first
			case errors.Is(err, worlds.ErrTooEarly):
				// The World's clock says a wait is not due yet: try again shortly.
				return e.queueWorkflow(ctx, run.WorkflowName, runID, e.clock().Add(time.Second), "")
			case errors.Is(err, worlds.ErrGone):
				return nil
			case err != nil:
				return err
			}
			if run.Status == worlds.RunPending {
				ctx = e.obs.RunStarted(ctx, info)
			}
			events = append(events, stored...)
			run.Status = worlds.RunRunning
			hist = buildHistory(run, events)
		}
		if (d.Attempt > 1 || raced) && inlined == 0 {
			// This delivery ran before and may have died between an append and its
			// queueing, or in a step it ran inline; or it lost a race to a
			// concurrent delivery that may still die there: queue the deliveries of
			// pending operations again. If that fails too, the delivery must fail,
			// or the operations are never run.
			if err := e.requeuePending(ctx, hist, d); err != nil {
				return err
			}
		}

		x := newExecution(e, e.world, hist, modeAdvance, "")
		x.run(withInfo(ctx, info), f)
		switch x.kind {
		case outSuspended:
			if len(x.pending) == 0 {
				return nil
			}
			if p := x.pending[0]; len(x.pending) == 1 && p.kind == opStep && e.inlineOK(ctx) && inlined < maxInlineSteps {
				done, err := e.runInline(ctx, d, info, p)
				switch {
				case errors.Is(err, worlds.ErrConflict):
					raced = true
					continue
				case err != nil || !done:
					return err
				}
				inlined++
				round = -1 // progress, not a lost race: the round budget starts again
				continue
			}
			evs := make([]worlds.Event, len(x.pending))
			for i, p := range x.pending {
				evs[i] = p.event
			}
			stored, err := e.world.Append(ctx, runID, evs...)
			switch {
			case errors.Is(err, worlds.ErrConflict):
				raced = true
				continue
			case errors.Is(err, worlds.ErrGone):
				return nil
			case err != nil:
				return err
			}
			return e.queueCreated(ctx, run.WorkflowName, runID, stored)
		case outReturned:
			if x.err != nil {
				return e.finish(ctx, info, worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(x.err)}, x.err)
			}
			return e.finish(ctx, info, worlds.Event{Type: worlds.EventRunCompleted, Output: x.output}, nil)
		case outDiverged:
			ei := errorInfo(x.err)
			ei.Fatal = true
			e.log.ErrorContext(ctx, "workflow diverged from its history", "run_id", runID, "error", x.err)
			return e.finish(ctx, info, worlds.Event{Type: worlds.EventRunFailed, Error: ei}, x.err)
		case outPanicked:
			perr := &PanicError{Value: fmt.Sprint(x.panicVal), Stack: string(x.stack)}
			return e.finish(ctx, info, worlds.Event{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{
				Message: perr.Error(), Type: "panic", Fatal: true, Stack: perr.Stack}}, perr)
		default:
			err := errors.New("workflow: workflow goroutine exited without returning (runtime.Goexit in workflow code?)")
			return e.finish(ctx, info, worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(err)}, err)
		}
	}
	if inlined > 0 {
		// Out of rounds after progress: let a fresh delivery go on.
		return e.queueWorkflow(ctx, d.Input.WorkflowName, runID, time.Time{}, "")
	}
	return fmt.Errorf("workflow: run %s: %w", runID, worlds.ErrAppendContention)
}

// maxInlineSteps bounds the steps one delivery runs inline before it hands the
// run to a fresh delivery, so a long chain does not hold one delivery forever.
const maxInlineSteps = 64

// inlineOK reports whether a step may run inline in this delivery: the client
// does not queue every step, and the entry point's hand-off time has not come.
func (e *engine) inlineOK(ctx context.Context) bool {
	if e.queueSteps {
		return false
	}
	if at, ok := worlds.HandOffAt(ctx); ok && !time.Now().Before(at) {
		return false
	}
	return true
}

// runInline creates step p and starts its first attempt in one append, naming
// this delivery in step_started, runs the attempt here and records its outcome.
// done reports that the run may go on at once (the step completed or failed for
// good); a retry is queued as a step delivery. A conflict means a concurrent
// delivery appended first: the caller re-reads the log.
//
// If this delivery dies during the attempt, its redelivery finds the step
// started under its own ID and queues the next attempt (requeuePending).
func (e *engine) runInline(ctx context.Context, d worlds.Delivery, run Info, p pendingOp) (done bool, err error) {
	started := worlds.Event{Type: worlds.EventStepStarted, CorrelationID: p.event.CorrelationID, Attempt: 1, DeliveryID: d.ID}
	if _, err := e.world.Append(ctx, run.RunID, p.event, started); err != nil {
		if errors.Is(err, worlds.ErrGone) {
			return false, nil
		}
		return false, err
	}
	info := Info{RunID: run.RunID, WorkflowName: run.WorkflowName, StepID: p.event.CorrelationID, StepName: p.step.name, Attempt: 1}
	ev, out, actx, rctx, cancel := e.attempt(ctx, info, p.step, p.event.Input)
	defer cancel()
	err = e.appendOutcome(rctx, run.RunID, ev)
	switch {
	case err == nil:
		e.obs.StepFinished(actx, info, *out)
		if ev.Type == worlds.EventStepRetrying {
			return false, e.queueStep(rctx, run.WorkflowName, run.RunID, ev.CorrelationID, *ev.RetryAt)
		}
		return true, nil
	case errors.Is(err, worlds.ErrConflict):
		return false, err // recorded by a concurrent delivery, or our own lost response
	default:
		// Gone, an output too large, a World still failing: the queued path's
		// handling, which wakes the run once recorded.
		return false, e.settleOutcome(rctx, actx, info, ev, out, err)
	}
}

// finish appends the run's terminal event.
func (e *engine) finish(ctx context.Context, info Info, ev worlds.Event, cause error) error {
	if _, err := e.world.Append(ctx, info.RunID, ev); err != nil {
		if errors.Is(err, worlds.ErrGone) {
			return nil // cancelled or finished by a concurrent delivery
		}
		if ev.Type == worlds.EventRunCompleted && errors.Is(err, worlds.ErrEventInvalid) {
			// The output could not be stored (too large for this World): fail instead.
			serr := &SerializationError{What: "workflow output", Err: err}
			return e.finish(ctx, info, worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(serr)}, serr)
		}
		return err
	}
	status := worlds.RunCompleted
	if ev.Type == worlds.EventRunFailed {
		status = worlds.RunFailed
	}
	e.obs.RunFinished(ctx, info, status, cause)
	e.closeStreams(ctx, info.RunID)
	return nil
}

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

// outcomeRetries bounds how often a step's outcome is re-sent after a transient
// World failure (a throttle, a timeout), before the delivery is left to retry.
const outcomeRetries = 5

// appendOutcome appends a finished attempt's outcome, retrying transient World
// failures with backoff: the attempt has already run, and giving up here means
// running its side effect again on redelivery. Rejections (any worlds error
// kind) are final and returned at once.
func (e *engine) appendOutcome(ctx context.Context, runID string, ev worlds.Event) error {
	wait := 20 * time.Millisecond
	for i := 0; ; i++ {
		_, err := e.world.Append(ctx, runID, ev)
		if err == nil || i == outcomeRetries || worlds.KindOf(err) != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
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
	for pos := 1; pos <= h.maxPos; pos++ {
		r := h.byPos[pos]
		if r == nil || r.kind != opWait || r.done != nil || r.created.ResumeAt == nil || wakeID(h.run.RunID, r.id) != d.ID {
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
		case r.kind == opStep && r.attempts == 0:
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

// runStep handles a DeliverStep delivery: one attempt of one step.
func (e *engine) runStep(ctx context.Context, d worlds.Delivery, f flow) error {
	runID, stepID, wf := d.Input.RunID, d.Input.StepID, d.Input.WorkflowName
	run, err := e.world.GetRun(ctx, runID)
	if errors.Is(err, worlds.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if run.Status.Terminal() {
		return nil
	}
	step, err := e.world.GetStep(ctx, runID, stepID)
	if errors.Is(err, worlds.ErrStepNotFound) {
		e.log.WarnContext(ctx, "delivery for unknown step acknowledged", "run_id", runID, "step_id", stepID)
		return nil
	}
	if err != nil {
		return err
	}
	if step.Status.Terminal() {
		if d.Attempt > 1 { // the delivery that finished it may have died before waking the run
			return e.queueWorkflow(ctx, wf, runID, time.Time{}, "")
		}
		return nil
	}
	now := e.clock()
	if step.RetryAt != nil && now.Before(*step.RetryAt) {
		return e.queueStep(ctx, wf, runID, stepID, *step.RetryAt) // arrived early
	}
	if step.Status == worlds.StepRunning && d.Attempt <= 1 && d.Input.Attempt <= step.Attempt {
		// Another delivery is running this attempt; a worker that died running it
		// leaves its own delivery to be redelivered (Attempt > 1), which starts the
		// next attempt.
		return nil
	}

	events, err := worlds.AllEvents(ctx, e.world, runID)
	if err != nil {
		return err
	}
	x := newExecution(e, e.world, buildHistory(run, events), modeCapture, stepID)
	x.run(withInfo(ctx, Info{RunID: runID, WorkflowName: run.WorkflowName, Replaying: true}), f)
	if x.kind == outSuspended || x.kind == outExited {
		// The replay stopped at an unresolved operation before reaching the step; that
		// cannot happen for code that is deterministic, so let the delivery retry.
		return fmt.Errorf("workflow: run %s: replay stopped before reaching step %s", runID, stepID)
	}
	if x.kind != outCaptured || x.capture == nil {
		err := x.err
		if x.kind == outPanicked {
			err = &PanicError{Value: fmt.Sprint(x.panicVal), Stack: string(x.stack)}
		}
		if err == nil {
			err = &NondeterminismError{RunID: runID, Position: x.pos, Expected: "step " + stepID, Actual: "no such step call"}
		}
		ei := errorInfo(err)
		ei.Fatal = true
		return e.finish(ctx, Info{RunID: runID, WorkflowName: run.WorkflowName}, worlds.Event{Type: worlds.EventRunFailed, Error: ei}, err)
	}
	c := x.capture
	attempt := step.Attempt + 1
	info := Info{RunID: runID, WorkflowName: run.WorkflowName, StepID: stepID, StepName: step.StepName, Attempt: attempt}
	if attempt > c.opts.retry.MaxAttempts {
		// The last attempt's worker died without recording an outcome.
		ei := &worlds.ErrorInfo{Message: fmt.Sprintf("attempt %d of %d was lost with its worker; attempts exhausted", step.Attempt, c.opts.retry.MaxAttempts)}
		return e.stepOutcome(ctx, ctx, info, worlds.Event{Type: worlds.EventStepFailed, CorrelationID: stepID, Error: ei}, nil)
	}
	if _, err := e.world.Append(ctx, runID, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: stepID, Attempt: attempt}); err != nil {
		switch {
		case errors.Is(err, worlds.ErrConflict), errors.Is(err, worlds.ErrGone):
			return nil // a concurrent delivery started or finished it; the run went away
		case errors.Is(err, worlds.ErrTooEarly):
			return e.queueStep(ctx, wf, runID, stepID, now.Add(time.Second))
		}
		return err
	}

	ev, out, actx, rctx, cancel := e.attempt(ctx, info, c, step.Input)
	defer cancel()
	return e.stepOutcome(rctx, actx, info, ev, out)
}

// attempt runs one started attempt of step c and returns the outcome event to
// record, the outcome for observers, the attempt's context (for StepFinished),
// and the context to record in: it outlives ctx, so a finished side effect is
// recorded even when the delivery is being cancelled (shutdown) and not run again
// needlessly. cancel releases it.
func (e *engine) attempt(ctx context.Context, info Info, c *captured, input json.RawMessage) (ev worlds.Event, out *StepOutcome, actx, rctx context.Context, cancel context.CancelFunc) {
	actx = withStepScope(withInfo(ctx, info), stepScope{world: e.world, runID: info.RunID})
	actx = e.obs.StepStarted(actx, info)
	callCtx, cancelCall := actx, context.CancelFunc(func() {})
	if c.opts.timeout > 0 {
		callCtx, cancelCall = context.WithTimeout(actx, c.opts.timeout)
	}
	start := e.clock()
	output, runErr := e.callStep(callCtx, info, c, input)
	cancelCall()
	dur := e.clock().Sub(start)
	rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)

	if runErr == nil {
		return worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: info.StepID, Output: output},
			&StepOutcome{Result: StepCompleted, Duration: dur}, actx, rctx, cancel
	}
	ei := errorInfo(runErr)
	var pe *PanicError
	if errors.As(runErr, &pe) {
		ei.Type, ei.Stack = "panic", pe.Stack
	}
	if ei.Fatal || info.Attempt >= c.opts.retry.MaxAttempts {
		return worlds.Event{Type: worlds.EventStepFailed, CorrelationID: info.StepID, Error: ei},
			&StepOutcome{Result: StepFailed, Duration: dur, Err: runErr}, actx, rctx, cancel
	}
	at := e.clock().Add(c.opts.retry.Backoff(info.Attempt)).UTC()
	return worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: info.StepID, Error: ei, RetryAt: &at},
		&StepOutcome{Result: StepRetrying, Duration: dur, Err: runErr, RetryAt: at}, actx, rctx, cancel
}

// stepOutcome records how an attempt ended and queues what comes next.
//
// actx is the attempt's context, which the observer's StepFinished receives.
func (e *engine) stepOutcome(ctx, actx context.Context, info Info, ev worlds.Event, out *StepOutcome) error {
	return e.settleOutcome(ctx, actx, info, ev, out, e.appendOutcome(ctx, info.RunID, ev))
}

// settleOutcome goes on from appending an attempt's outcome, whose result was
// err: it tells observers, handles a rejection, and queues what comes next.
func (e *engine) settleOutcome(ctx, actx context.Context, info Info, ev worlds.Event, out *StepOutcome, err error) error {
	if err == nil && out != nil {
		e.obs.StepFinished(actx, info, *out)
	}
	switch {
	case errors.Is(err, worlds.ErrGone):
		return nil // run cancelled or finished
	case errors.Is(err, worlds.ErrConflict):
		// A concurrent attempt recorded first, or our own earlier send did and only
		// its response was lost: then nobody has woken the run yet, so wake it (a
		// spare replay is harmless).
		return e.queueWorkflow(ctx, info.WorkflowName, info.RunID, time.Time{}, "")
	case ev.Type == worlds.EventStepCompleted && errors.Is(err, worlds.ErrEventInvalid):
		// The World refused the output (too large): the step fails for good.
		ei := &worlds.ErrorInfo{Message: (&SerializationError{What: "step " + quote(info.StepName) + " output", Err: err}).Error(), Fatal: true}
		return e.stepOutcome(ctx, actx, info, worlds.Event{Type: worlds.EventStepFailed, CorrelationID: ev.CorrelationID, Error: ei},
			&StepOutcome{Result: StepFailed, Err: err})
	case err != nil:
		return err
	}
	if ev.Type == worlds.EventStepRetrying {
		return e.queueStep(ctx, info.WorkflowName, info.RunID, ev.CorrelationID, *ev.RetryAt)
	}
	return e.queueWorkflow(ctx, info.WorkflowName, info.RunID, time.Time{}, "")
}
