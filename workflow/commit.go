package workflow

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// carried is the outcome of a step attempt run inline that is still to be
// appended: it goes with the next write the workflow code reaches (the next
// step's creation, a wait, a hook, the run's end), so a sequential workflow
// costs one append per step. The execution's history holds it already, with the
// Seq it will get; the code may not read its time before it is stored
// ([execution.stored]).
//
// If the process dies before that write, the step's started attempt has no
// outcome in the log, and the delivery's redelivery queues the attempt again:
// the step runs again, as steps run at least once.
type carried struct {
	ev     worlds.Event
	out    *StepOutcome
	info   Info
	actx   context.Context // the attempt's context, for StepFinished
	rctx   context.Context // outlives the delivery's context, to record in
	cancel context.CancelFunc
}

// stored tells observers the outcome is in the log. The recording context stays
// usable for the writes that follow in the delivery; drive releases it.
func (c *carried) stored(e *engine) {
	e.obs.StepFinished(c.actx, c.info, *c.out)
}

// settle records the outcome alone, as a queued step attempt does, after the
// write it was to go with failed with cause, and wakes the run with a fresh
// delivery; the execution was aborted. A transient cause is returned so the
// delivery is retried: the write may have been applied with its response lost.
func (c *carried) settle(e *engine, cause error) error {
	defer c.cancel()
	_, err := e.appendOutcome(c.rctx, c.info.RunID, c.ev)
	err = e.settleOutcome(c.rctx, c.actx, c.info, c.ev, c.out, err)
	if worlds.KindOf(cause) == nil {
		return errors.Join(cause, err)
	}
	return err
}

// applyStored applies events the execution's delivery appended to its history.
// When the first is a carried outcome already in the history, it replaces it
// with the stored copy, whose time is the World's. It returns false when the
// events do not follow the history's without a gap (another writer appended in
// between): the history no longer matches the log.
func (x *execution) applyStored(stored []worlds.Event) bool {
	if len(stored) == 0 {
		return true
	}
	first := stored[0]
	if x.hist.seq > x.stored {
		// The history ends with an event not yet stored (run_started or a carried
		// outcome): stored[0] must be it.
		var t *worlds.Event
		if first.Type == worlds.EventRunStarted {
			t = x.hist.started
		} else if r := x.hist.byID[first.CorrelationID]; r != nil {
			t = r.done
		}
		if t == nil || first.Seq != x.stored+1 || x.hist.seq != first.Seq || t.Seq != first.Seq || t.Type != first.Type {
			return false
		}
		*t = first
		if x.consumed == first.Seq {
			x.now = first.CreatedAt
		}
		x.stored = first.Seq
		stored = stored[1:]
		if len(stored) == 0 {
			return true
		}
	}
	if stored[0].Seq != x.hist.seq+1 {
		return false
	}
	x.hist.apply(stored)
	x.stored = x.hist.seq
	return true
}

// keep puts the parked execution in the run cache, or ends it.
func (e *engine) keep(x *execution) {
	if e.cache != nil {
		e.cache.put(x.runID, e.world, x)
		return
	}
	x.abort()
}

// drive takes the execution from where it parked or ended to the end of the
// delivery: it appends what the code reached, runs a lone new step inline and
// resumes the code with its outcome, and finally caches the parked execution.
// again reports a lost race: the caller replays the run from the log (x ended).
func (e *engine) drive(ctx context.Context, d worlds.Delivery, info Info, x *execution, head []worlds.Event, inlined *int) (again bool, err error) {
	runID := info.RunID
	var carry *carried
	var cancels []context.CancelFunc // of the carried outcomes' recording contexts
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	// fail ends x after the append of evs failed with err.
	fail := func(err error) (bool, error) {
		x.abort()
		if c := carry; c != nil {
			carry = nil
			return false, c.settle(e, err)
		}
		switch {
		case errors.Is(err, worlds.ErrConflict):
			return true, nil
		case errors.Is(err, worlds.ErrGone):
			return false, nil
		}
		return false, err
	}
	for {
		wctx := ctx
		evs := append([]worlds.Event(nil), head...)
		if carry != nil {
			wctx = carry.rctx
			evs = append(evs, carry.ev)
		}
		switch x.outcome() {
		case outHung:
			if !x.deadlocked() {
				// The delivery's context ended during the code's turn: record a
				// carried outcome alone and let the delivery be retried.
				return fail(x.hung)
			}
			c := carry
			carry = nil
			return false, e.end(wctx, info, x, head, c)
		case outNeedClock:
			// The code asked for the time of the carried outcome: store it now.
			stored, err := e.world.Append(wctx, runID, append(evs, x.marks...)...)
			if err != nil {
				return fail(err)
			}
			head, x.marks = nil, nil
			e.cancelWakes(wctx, runID, stored)
			synced := x.applyStored(stored)
			if carry != nil {
				carry.stored(e)
				carry = nil
			}
			if !synced {
				x.abort()
				return false, e.queueWorkflow(wctx, info.WorkflowName, runID, time.Time{}, "")
			}
			x.proceed(withInfo(ctx, info))
			continue
		case outSuspended:
		default:
			x.abort()
			c := carry
			carry = nil
			return false, e.end(wctx, info, x, head, c)
		}
		p := pendingOp{}
		if len(x.pending) > 0 {
			p = x.pending[0]
		}
		inline := len(x.pending) == 1 && p.kind == opStep && ctx.Err() == nil && e.inlineOK(ctx) && *inlined < maxInlineSteps
		for _, op := range x.pending {
			evs = append(evs, op.event)
			if op.step != nil {
				if x.fns == nil {
					x.fns = map[string]*captured{}
				}
				x.fns[op.event.CorrelationID] = op.step
			}
		}
		if inline {
			// Create the step and start its first attempt in one append, naming this
			// delivery in step_started: if the delivery dies during the attempt, its
			// redelivery finds the step started under its own ID and queues the next
			// attempt (requeuePending).
			evs = append(evs, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: p.event.CorrelationID, Attempt: 1, DeliveryID: d.ID,
				HeartbeatTimeout: p.step.opts.heartbeat})
		}
		// Marks (a Version record, a timer's cancellation) go last: a cancelled
		// timer's wait_created may be in this very write.
		evs = append(evs, x.marks...)
		x.marks = nil
		if len(evs) == 0 {
			e.keep(x) // waiting for something outside: a step delivery, a hook, a timer
			return false, nil
		}
		stored, err := e.world.Append(wctx, runID, evs...)
		if err != nil {
			return fail(err)
		}
		head = nil
		e.cancelWakes(wctx, runID, stored)
		synced := x.applyStored(stored)
		if carry != nil {
			carry.stored(e)
			carry = nil
		}
		if !inline {
			// Cache the execution before queueing, so the queued steps' deliveries
			// find their functions in it.
			if synced {
				e.keep(x)
			} else {
				x.abort()
			}
			return false, e.queueCreated(wctx, info.WorkflowName, runID, stored)
		}
		*inlined++
		sinfo := Info{RunID: runID, WorkflowName: info.WorkflowName, StepID: p.event.CorrelationID, StepName: p.step.name, Attempt: 1}
		ev, out, actx, rctx, cancel := e.attempt(ctx, sinfo, p.step, p.event.Input)
		cancels = append(cancels, cancel)
		c := &carried{ev: ev, out: out, info: sinfo, actx: actx, rctx: rctx, cancel: cancel}
		if ev.Type == "" {
			// A child run started: its end completes the step and wakes the run.
			e.obs.StepFinished(actx, sinfo, *out)
			if synced {
				e.keep(x)
				return false, nil
			}
			x.abort()
			return false, e.queueWorkflow(rctx, info.WorkflowName, runID, time.Time{}, "")
		}
		if ev.Type == worlds.EventStepRetrying || !synced {
			// A retry is recorded now and queued as a step delivery. A history out of
			// step with the log is let go of: the outcome is recorded alone and a
			// fresh delivery replays the run.
			stored, err := e.appendOutcome(rctx, runID, ev)
			if err == nil && synced && x.applyStored(stored) {
				c.stored(e)
				err = e.queueStep(rctx, info.WorkflowName, runID, ev.CorrelationID, *ev.RetryAt)
				e.keep(x)
				return false, err
			}
			x.abort()
			return false, e.settleOutcome(rctx, actx, sinfo, ev, out, err)
		}
		// Hand the outcome to the code before it is stored: the code runs on to what
		// it reaches next, and the outcome is appended with that.
		tev := ev
		tev.RunID, tev.Seq, tev.CreatedAt = runID, x.stored+1, e.clock().UTC()
		x.hist.apply([]worlds.Event{tev})
		carry = c
		x.proceed(withInfo(ctx, info))
	}
}

// end appends the run's terminal event for an execution that returned, diverged,
// panicked or exited, after the carried outcome, if any. A workflow that
// returned [ContinueAsNew]'s error ends completed, after the run continuing it
// is created.
func (e *engine) end(ctx context.Context, info Info, x *execution, head []worlds.Event, c *carried) error {
	var ev worlds.Event
	var pre []worlds.Event // go before ev in the same write
	var cause error
	switch x.outcome() {
	case outReturned:
		if x.hist.cancelSeq > 0 {
			// The run was asked to stop: whatever its code returned after its
			// cleanup, it ends cancelled (and does not continue as new; a
			// continuation an earlier attempt created is cancelled with it).
			ev, cause = worlds.Event{Type: worlds.EventRunCancelled, Reason: x.hist.cancelReason}, &CancelledError{RunID: info.RunID, Reason: x.hist.cancelReason}
			if _, ok := isContinuation(x.err); ok {
				defer e.abandonContinuation(ctx, x.hist.run)
			}
		} else if can, ok := isContinuation(x.err); ok {
			evs, err := e.continueAsNew(ctx, x.hist.run, can.Input)
			if err != nil {
				if c != nil {
					return c.settle(e, err)
				}
				return err
			}
			pre, ev = evs[:len(evs)-1], evs[len(evs)-1]
		} else if x.err != nil {
			ev, cause = worlds.Event{Type: worlds.EventRunFailed, Error: e.errs.errorInfo(x.err)}, x.err
		} else {
			ev = worlds.Event{Type: worlds.EventRunCompleted, Output: x.output}
		}
	default:
		// The workflow code failed: it panicked, diverged from the log, did not
		// yield, or exited its goroutine.
		var ei *worlds.ErrorInfo
		cause, ei = x.codeError()
		if x.policy == BlockOnCodeError {
			return e.blockRun(ctx, info, x.hist, head, c, cause, ei)
		}
		e.log.ErrorContext(ctx, "workflow code failed; the run fails (FailOnCodeError)", "run_id", info.RunID, "error", cause)
		ev = worlds.Event{Type: worlds.EventRunFailed, Error: ei}
	}
	if x.outcome() == outReturned && x.hist.cancelSeq == 0 {
		// The execution may not have seen a cancel requested meanwhile (a cached
		// execution, a step run inline): a run asked to stop ends cancelled, so
		// let a fresh delivery replay it with the request.
		if run, err := e.world.GetRun(ctx, info.RunID); err == nil && run.Attributes[worlds.AttrCancelRequested] != "" {
			if c != nil {
				return c.settle(e, nil)
			}
			return e.queueWorkflow(ctx, info.WorkflowName, info.RunID, time.Time{}, "")
		}
	}
	// A Version marker the code chose since its last write is not needed by any
	// replay once the run has ended, but a timer's cancellation is recorded
	// with the end (the wait must not stay waiting, and its wake-up is
	// withdrawn), and so are attributes the code upserted: the run is found by
	// them after its end.
	cancels := x.cancelMarks()
	tail := slices.Concat(cancels, pre, []worlds.Event{ev})
	if c == nil {
		if len(head) > 0 {
			// run_started goes first; a rejected end is handled by the replay of a
			// fresh round once run_started is stored.
			_, err := e.world.Append(ctx, info.RunID, append(head, tail...)...)
			if err == nil {
				return e.ended(ctx, info, x.hist.run, tail, cause)
			}
			if _, herr := e.world.Append(ctx, info.RunID, head...); herr != nil {
				switch {
				case errors.Is(herr, worlds.ErrGone) && worlds.KindOf(err) == nil:
					// The end failed without being refused, and the run has ended
					// since: that write may have been applied with its answer lost.
					// Fail the delivery, so its redelivery (Attempt > 1) finds the run
					// ended and goes on from the end (queues the continuation, tells
					// the parent); a fresh delivery would take the end for done.
					return err
				case !errors.Is(herr, worlds.ErrConflict) && !errors.Is(herr, worlds.ErrGone):
					return herr
				}
			}
			return e.queueWorkflow(ctx, info.WorkflowName, info.RunID, time.Time{}, "")
		}
		if len(pre) == 0 {
			return e.finish(ctx, info, x.hist.run, cancels, ev, cause)
		}
		if _, err := e.world.Append(ctx, info.RunID, tail...); err != nil {
			if errors.Is(err, worlds.ErrGone) {
				e.abandonContinuation(ctx, x.hist.run)
				return nil
			}
			return err
		}
		return e.ended(ctx, info, x.hist.run, tail, cause)
	}
	if _, err := e.world.Append(ctx, info.RunID, append([]worlds.Event{c.ev}, tail...)...); err != nil {
		// Record the outcome alone; the fresh delivery settle queues replays the
		// run and ends it as this one would have.
		return c.settle(e, err)
	}
	c.stored(e)
	return e.ended(ctx, info, x.hist.run, tail, cause)
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

// finish appends the terminal event of run, after pre (cancelled timers).
func (e *engine) finish(ctx context.Context, info Info, run worlds.Run, pre []worlds.Event, ev worlds.Event, cause error) error {
	tail := slices.Concat(pre, []worlds.Event{ev})
	if _, err := e.world.Append(ctx, info.RunID, tail...); err != nil {
		if errors.Is(err, worlds.ErrGone) {
			return nil // cancelled or finished by a concurrent delivery
		}
		if ev.Type == worlds.EventRunCompleted && errors.Is(err, worlds.ErrEventInvalid) {
			// The output could not be stored (too large for this World): fail instead.
			serr := &SerializationError{What: "workflow output", Err: err}
			return e.finish(ctx, info, run, pre, worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(serr)}, serr)
		}
		return err
	}
	return e.ended(ctx, info, run, tail, cause)
}

// cancelMarks returns the marks of an execution that returned that go with
// the run's final write: the cancellations of timers whose waits are in the
// log (a timer created and cancelled since the last write has no wait, and no
// wake-up, to cancel), and the attributes it upserted.
func (x *execution) cancelMarks() []worlds.Event {
	if x.outcome() != outReturned {
		return nil
	}
	var out []worlds.Event
	for _, m := range x.marks {
		if m.Type == worlds.EventWaitCompleted && m.Reason == worlds.WaitCancelled && x.hist.byID[m.CorrelationID] != nil || isUpsert(m) {
			out = append(out, m)
		}
	}
	return out
}

// ended goes on from the write of tail, which ended run with its last event:
// it tells observers, closes streams, queues the run continuing it, if any, and
// records the end in the parent of a child run.
func (e *engine) ended(ctx context.Context, info Info, run worlds.Run, tail []worlds.Event, cause error) error {
	ev := tail[len(tail)-1]
	e.cancelWakes(ctx, info.RunID, tail)
	e.finished(ctx, info, ev, cause)
	view := endedRun(run, ev)
	if ev.Type == worlds.EventRunCancelled {
		return e.cancelLinks(ctx, view)
	}
	for _, t := range tail {
		if t.Type == worlds.EventAttributesSet {
			if view.Attributes == nil {
				view.Attributes = map[string]string{}
			}
			maps.Copy(view.Attributes, t.Attributes)
		}
	}
	return errors.Join(e.continued(ctx, view), e.notifyParent(ctx, view))
}

// finished tells observers the run ended with terminal event ev and closes its
// streams.
func (e *engine) finished(ctx context.Context, info Info, ev worlds.Event, cause error) {
	status := worlds.RunCompleted
	switch ev.Type {
	case worlds.EventRunFailed:
		status = worlds.RunFailed
	case worlds.EventRunCancelled:
		status = worlds.RunCancelled
	}
	e.obs.RunFinished(ctx, info, status, cause)
	e.closeStreams(ctx, info.RunID)
}

// outcomeRetries bounds how often a step's outcome is re-sent after a transient
// World failure (a throttle, a timeout), before the delivery is left to retry.
const outcomeRetries = 5

// appendOutcome appends a finished attempt's outcome, retrying transient World
// failures with backoff: the attempt has already run, and giving up here means
// running its side effect again on redelivery. Rejections (any worlds error
// kind) are final and returned at once.
func (e *engine) appendOutcome(ctx context.Context, runID string, ev worlds.Event) ([]worlds.Event, error) {
	wait := 20 * time.Millisecond
	for i := 0; ; i++ {
		stored, err := e.world.Append(ctx, runID, ev)
		if err == nil || i == outcomeRetries || worlds.KindOf(err) != nil {
			return stored, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}
