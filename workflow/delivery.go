package workflow

import (
	"context"
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
		if round == 0 {
			if err := e.rearmEarlyWake(ctx, d, hist); err != nil {
				return err
			}
		}
		if len(extra) > 0 {
			stored, err := e.world.Append(ctx, runID, extra...)
			switch {
			case errors.Is(err, worlds.ErrConflict):
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
		if d.Attempt > 1 || round > 0 {
			// This delivery ran before and may have died between an append and its
			// queueing, or it lost a race to a concurrent delivery that may still
			// die there: queue the deliveries of pending operations again. If that
			// fails too, the delivery must fail, or the operations are never run.
			if err := e.requeuePending(ctx, hist); err != nil {
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
			evs := make([]worlds.Event, len(x.pending))
			for i, p := range x.pending {
				evs[i] = p.event
			}
			stored, err := e.world.Append(ctx, runID, evs...)
			switch {
			case errors.Is(err, worlds.ErrConflict):
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
	return fmt.Errorf("workflow: run %s: %w", runID, worlds.ErrAppendContention)
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

func (e *engine) requeuePending(ctx context.Context, h *history) error {
	var errs []error
	for pos := 1; pos <= h.maxPos; pos++ {
		r := h.byPos[pos]
		if r == nil || r.done != nil {
			continue
		}
		switch {
		case r.kind == opStep && r.attempts == 0:
			errs = append(errs, e.queueStep(ctx, h.run.WorkflowName, h.run.RunID, r.id, time.Time{}))
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
	if step.Status == worlds.StepRunning && d.Attempt <= 1 {
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

	actx := withStepScope(withInfo(ctx, info), stepScope{world: e.world, runID: runID})
	actx = e.obs.StepStarted(actx, info)
	cancel := context.CancelFunc(func() {})
	if c.opts.timeout > 0 {
		actx, cancel = context.WithTimeout(actx, c.opts.timeout)
	}
	start := e.clock()
	out, runErr := c.call(actx, step.Input)
	cancel()
	dur := e.clock().Sub(start)
	// The attempt has run: record its outcome even if the delivery is being cancelled
	// (shutdown), so a finished side effect is not run again needlessly.
	ctx, cancelRecord := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancelRecord()

	if runErr == nil {
		ev := worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: stepID, Output: out}
		return e.stepOutcome(ctx, actx, info, ev, &StepOutcome{Result: StepCompleted, Duration: dur})
	}
	ei := errorInfo(runErr)
	var pe *PanicError
	if errors.As(runErr, &pe) {
		ei.Type, ei.Stack = "panic", pe.Stack
	}
	if ei.Fatal || attempt >= c.opts.retry.MaxAttempts {
		ev := worlds.Event{Type: worlds.EventStepFailed, CorrelationID: stepID, Error: ei}
		return e.stepOutcome(ctx, actx, info, ev, &StepOutcome{Result: StepFailed, Duration: dur, Err: runErr})
	}
	at := e.clock().Add(c.opts.retry.Backoff(attempt)).UTC()
	ev := worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: stepID, Error: ei, RetryAt: &at}
	return e.stepOutcome(ctx, actx, info, ev, &StepOutcome{Result: StepRetrying, Duration: dur, Err: runErr, RetryAt: at})
}

// stepOutcome records how an attempt ended and queues what comes next.
//
// actx is the attempt's context, which the observer's StepFinished receives.
func (e *engine) stepOutcome(ctx, actx context.Context, info Info, ev worlds.Event, out *StepOutcome) error {
	err := e.appendOutcome(ctx, info.RunID, ev)
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
