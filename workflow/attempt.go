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

// recordTimeout bounds recording a finished step attempt after its delivery's
// context ended.
const recordTimeout = 10 * time.Second

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
	lost := false // the running attempt missed its heartbeat deadline
	if step.Status == worlds.StepRunning && d.Attempt <= 1 && d.Input.Attempt <= step.Attempt {
		// Another delivery is running this attempt; a worker that died running it
		// leaves its own delivery to be redelivered (Attempt > 1), which starts the
		// next attempt. An attempt with a heartbeat timeout is checked by a
		// delivery due at its deadline: past it, the attempt is failed here.
		due, deadline := heartbeatDue(step, now)
		if !due || d.Input.Attempt != step.Attempt {
			if !deadline.IsZero() && d.Input.Attempt == step.Attempt && strings.HasPrefix(d.ID, heartbeatCheckPrefix(runID, stepID, step.Attempt)) {
				// A heartbeat moved the deadline: check again then.
				info := Info{RunID: runID, WorkflowName: wf, StepID: stepID, Attempt: step.Attempt}
				return e.queueHeartbeatCheck(ctx, info, deadline, step.HeartbeatTimeout)
			}
			return nil
		}
		lost = true
	}

	if c := e.cache.step(runID, e.world, stepID); c != nil && c.name == step.StepName {
		// The run's cached execution queued this step: it has the function.
		if lost {
			return e.heartbeatLost(ctx, run, step, c)
		}
		return e.startAttempt(ctx, d, run, step, c)
	}
	events, err := worlds.AllEvents(ctx, e.world, runID)
	if err != nil {
		return err
	}
	x := newExecution(e, e.world, buildHistory(run, events), modeCapture, stepID)
	x.run(withInfo(ctx, Info{RunID: runID, WorkflowName: run.WorkflowName, Replaying: true}), f)
	if k := x.outcome(); k == outSuspended || k == outExited {
		// The replay stopped at an unresolved operation before reaching the step; that
		// cannot happen for code that is deterministic, so let the delivery retry.
		return fmt.Errorf("workflow: run %s: replay stopped before reaching step %s", runID, stepID)
	}
	if x.outcome() != outCaptured || x.capture == nil {
		return e.captureFailed(ctx, run, x)
	}
	if lost {
		return e.heartbeatLost(ctx, run, step, x.capture)
	}
	return e.startAttempt(ctx, d, run, step, x.capture)
}

// startAttempt starts and runs the next attempt of step, whose function is c.
func (e *engine) startAttempt(ctx context.Context, d worlds.Delivery, run worlds.Run, step worlds.Step, c *captured) error {
	runID, stepID, wf := d.Input.RunID, d.Input.StepID, d.Input.WorkflowName
	now := e.clock()
	attempt := step.Attempt + 1
	info := Info{RunID: runID, WorkflowName: run.WorkflowName, StepID: stepID, StepName: step.StepName, Attempt: attempt}
	if c.opts.retry.exhausted(step.Attempt) {
		// The last attempt's worker died without recording an outcome.
		ei := &worlds.ErrorInfo{Message: fmt.Sprintf("attempt %d of %d was lost with its worker; attempts exhausted", step.Attempt, c.opts.retry.MaxAttempts)}
		return e.stepOutcome(ctx, ctx, info, worlds.Event{Type: worlds.EventStepFailed, CorrelationID: stepID, Error: ei}, nil)
	}
	if _, err := e.world.Append(ctx, runID, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: stepID, Attempt: attempt,
		HeartbeatTimeout: c.opts.heartbeat}); err != nil {
		switch {
		case errors.Is(err, worlds.ErrConflict), errors.Is(err, worlds.ErrGone):
			return nil // a concurrent delivery started or finished it; the run went away
		case errors.Is(err, worlds.ErrTooEarly):
			return e.queueStep(ctx, wf, runID, stepID, now.Add(time.Second))
		}
		return err
	}

	ev, out, actx, rctx, cancel := e.attemptWith(ctx, info, c, step.Input, step.HeartbeatDetails)
	defer cancel()
	return e.stepOutcome(rctx, actx, info, ev, out)
}

// attempt runs one started attempt of step c and returns the outcome event to
// record, the outcome for observers, the attempt's context (for StepFinished),
// and the context to record in: it outlives ctx, so a finished side effect is
// recorded even when the delivery is being cancelled (shutdown) and not run again
// needlessly. cancel releases it.
func (e *engine) attempt(ctx context.Context, info Info, c *captured, input json.RawMessage) (ev worlds.Event, out *StepOutcome, actx, rctx context.Context, cancel context.CancelFunc) {
	return e.attemptWith(ctx, info, c, input, nil)
}

// attemptWith is attempt for an attempt that follows earlier ones, whose last
// recorded heartbeat details were prev.
func (e *engine) attemptWith(ctx context.Context, info Info, c *captured, input, prev json.RawMessage) (ev worlds.Event, out *StepOutcome, actx, rctx context.Context, cancel context.CancelFunc) {
	hb := newHeartbeat(e, info, c.opts.heartbeat, prev)
	actx = withStepScope(withInfo(ctx, info), stepScope{world: e.world, runID: info.RunID, beat: hb})
	actx = e.obs.StepStarted(actx, info)
	// A cancel of the run sent from this process interrupts the attempt, and so
	// does a heartbeat the World refuses.
	callCtx, cancelRun := context.WithCancelCause(actx)
	hb.cancel = cancelRun
	done := e.steps.add(info.RunID, cancelRun)
	cancelCall := context.CancelFunc(func() {})
	if c.opts.timeout > 0 {
		callCtx, cancelCall = context.WithTimeout(callCtx, c.opts.timeout)
	}
	start := e.clock()
	var output json.RawMessage
	var runErr error
	if hb.timeout > 0 {
		if err := e.queueHeartbeatCheck(ctx, info, start.Add(hb.timeout), hb.timeout); err != nil {
			// This process still watches the attempt; only its death goes unnoticed
			// until the delivery's lease runs out.
			e.log.WarnContext(ctx, "queueing a step's heartbeat check", "run_id", info.RunID, "step_id", info.StepID, "error", err)
		}
		output, runErr = e.watch(callCtx, cancelRun, hb, c, input)
	} else {
		output, runErr = e.callStep(callCtx, info, c, input)
	}
	cancelCall()
	done()
	cancelRun(nil)
	dur := e.clock().Sub(start)
	rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)

	if runErr == nil {
		return worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: info.StepID, Output: output},
			&StepOutcome{Result: StepCompleted, Duration: dur}, actx, rctx, cancel
	}
	if cr := (*childRecord)(nil); errors.As(runErr, &cr) {
		// A StartChild operation: the child was created. Its end is the outcome,
		// recorded by the child (an empty event: nothing to record now), unless it
		// has ended already.
		return cr.event, &StepOutcome{Result: StepCompleted, Duration: dur}, actx, rctx, cancel
	}
	ei := e.errs.errorInfo(runErr)
	var pe *PanicError
	if errors.As(runErr, &pe) {
		ei.Type, ei.Stack = ErrorTypePanic, pe.Stack
	}
	ev = e.failure(info, c.opts.retry, ei)
	if errors.Is(runErr, ErrHeartbeatTimeout) {
		// A step delivery at the deadline may record the same timeout: only one
		// of them ends this attempt, and neither a later one.
		ev.Attempt = info.Attempt
	}
	if ev.Type == worlds.EventStepFailed {
		return ev, &StepOutcome{Result: StepFailed, Duration: dur, Err: runErr}, actx, rctx, cancel
	}
	hb.flush(rctx)
	return ev, &StepOutcome{Result: StepRetrying, Duration: dur, Err: runErr, RetryAt: *ev.RetryAt}, actx, rctx, cancel
}

// failure is the event recording that attempt info failed with ei under
// policy: step_failed for a non-retryable error or the last attempt, else
// step_retrying at the policy's delay.
func (e *engine) failure(info Info, policy RetryPolicy, ei *worlds.ErrorInfo) worlds.Event {
	if policy.nonRetryable(ei.Type) {
		ei.Fatal = true
	}
	if ei.Fatal || policy.exhausted(info.Attempt) {
		return worlds.Event{Type: worlds.EventStepFailed, CorrelationID: info.StepID, Error: ei}
	}
	at := e.clock().Add(policy.delay(info.RunID, info.StepID, info.Attempt)).UTC()
	return worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: info.StepID, Error: ei, RetryAt: &at}
}

// stepOutcome records how an attempt ended and queues what comes next.
//
// actx is the attempt's context, which the observer's StepFinished receives.
func (e *engine) stepOutcome(ctx, actx context.Context, info Info, ev worlds.Event, out *StepOutcome) error {
	if ev.Type == "" {
		// A started child run records the outcome when it ends.
		e.obs.StepFinished(actx, info, *out)
		return nil
	}
	_, err := e.appendOutcome(ctx, info.RunID, ev)
	return e.settleOutcome(ctx, actx, info, ev, out, err)
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
		if ev.Type == worlds.EventStepRetrying {
			// Our own retry may be the one stored: then nothing but this attempt
			// queues the next one, and a replay only parks on the step again.
			// Queue it; if another attempt recorded something else, the delivery
			// finds the step finished, or started, and does nothing.
			return errors.Join(e.queueStep(ctx, info.WorkflowName, info.RunID, ev.CorrelationID, *ev.RetryAt),
				e.queueWorkflow(ctx, info.WorkflowName, info.RunID, time.Time{}, ""))
		}
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
