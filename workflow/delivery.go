package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// advance handles a DeliverWorkflow delivery: it resumes the run's cached
// execution after applying the events appended since, or replays the workflow
// against the log, and appends what the code reached next, or the run's end.
func (e *engine) advance(ctx context.Context, d worlds.Delivery, f flow) error {
	runID := d.Input.RunID
	info := Info{RunID: runID, WorkflowName: d.Input.WorkflowName}
	var x *execution
	result := CacheOff
	if e.cache != nil {
		result = CacheMiss
		if x = e.cache.take(runID, e.world); x != nil {
			result = CacheStale
			if d.Attempt <= 1 {
				// A redelivery may follow a crash of this very delivery between its
				// writes: it replays, which re-queues pending operations.
				ok, done, err := e.refresh(ctx, d, x)
				if done {
					// The run ended or is gone (or could not be read): let go of it,
					// and let the replay below act on how it ended.
					e.cache.discard(x, EvictDropped)
					if err != nil {
						return err
					}
					x = nil
				} else if ok {
					result = CacheHit
					info.WorkflowName = x.wfName
				}
			}
			if result != CacheHit && x != nil {
				x.abort()
				x = nil
			}
		}
	}
	e.cache.lookup(ctx, e.obs, info, result)
	if x != nil {
		x.proceed(withInfo(ctx, info))
	}
	raced := false // lost an append to a concurrent delivery
	inlined := 0   // steps run inline by this delivery
	for round := 0; round < maxAdvanceRounds; round++ {
		var head []worlds.Event
		if x == nil {
			var done bool
			var err error
			ctx, x, head, done, err = e.replay(ctx, d, f, &info, round == 0 && inlined == 0, (d.Attempt > 1 || raced) && inlined == 0)
			if done {
				return err
			}
		}
		again, err := e.drive(ctx, d, info, x, head, &inlined)
		if !again {
			return err
		}
		raced, x = true, nil
	}
	if inlined > 0 {
		// Out of rounds after progress: let a fresh delivery go on.
		return e.queueWorkflow(ctx, d.Input.WorkflowName, runID, time.Time{}, "")
	}
	return fmt.Errorf("workflow: run %s: %w", runID, worlds.ErrAppendContention)
}

// advancing lists the events only a workflow delivery appends: finding one the
// cached execution did not append means another process advanced the run.
func advancing(t worlds.EventType) bool {
	switch t {
	case worlds.EventRunCreated, worlds.EventRunStarted, worlds.EventStepCreated, worlds.EventWaitCreated,
		worlds.EventHookCreated, worlds.EventHookConflict, worlds.EventHookDisposed:
		return true
	}
	return false
}

// marked reports whether ev is a mark only workflow code writes: a Version
// record or a timer's cancellation.
func marked(ev worlds.Event) bool {
	switch ev.Type {
	case worlds.EventAttributesSet:
		return versionsOf(ev.Attributes, nil)
	case worlds.EventWaitCompleted:
		return ev.Reason == worlds.WaitCancelled
	}
	return false
}

// refresh brings a cached execution up to the log: it reads the events appended
// since the execution's last one and applies them, and completes waits now due.
// ok false means the entry is stale and the run must be replayed; done means the
// delivery is over (the run ended or went away, or reading failed) with err.
func (e *engine) refresh(ctx context.Context, d worlds.Delivery, x *execution) (ok, done bool, err error) {
	runID := x.runID
	var events []worlds.Event
	filter := worlds.EventFilter{AfterSeq: x.stored, Limit: worlds.MaxPageSize}
	for {
		page, err := e.world.ListEvents(ctx, runID, filter)
		if errors.Is(err, worlds.ErrRunNotFound) {
			e.log.WarnContext(ctx, "delivery for unknown run acknowledged", "run_id", runID)
			return false, true, nil
		}
		if err != nil {
			return false, true, err
		}
		events = append(events, page.Items...)
		if page.Cursor == "" {
			break
		}
		filter.Cursor = page.Cursor
	}
	seq := x.stored
	for _, ev := range events {
		switch {
		case ev.Type == worlds.EventRunCompleted || ev.Type == worlds.EventRunFailed || ev.Type == worlds.EventRunCancelled:
			return false, true, nil
		case ev.Seq != seq+1 || advancing(ev.Type) || marked(ev):
			return false, false, nil
		}
		seq = ev.Seq
	}
	x.hist.apply(events)
	x.stored = x.hist.seq
	if due := x.hist.dueWaits(e.clock()); len(due) > 0 {
		stored, err := e.world.Append(ctx, runID, due...)
		if err != nil {
			return false, false, nil // the replay handles it
		}
		if !x.applyStored(stored) {
			return false, false, nil
		}
	}
	if err := e.rearmEarlyWake(ctx, d, x.hist); err != nil {
		return false, true, err
	}
	return true, false, nil
}

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
		if run.Status == worlds.RunPending {
			head = []worlds.Event{{Type: worlds.EventRunStarted}}
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
		switch x.kind {
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
			evs = append(evs, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: p.event.CorrelationID, Attempt: 1, DeliveryID: d.ID})
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
	switch x.kind {
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
			ev, cause = worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(x.err)}, x.err
		} else {
			ev = worlds.Event{Type: worlds.EventRunCompleted, Output: x.output}
		}
	case outDiverged:
		ei := errorInfo(x.err)
		ei.Fatal = true
		e.log.ErrorContext(ctx, "workflow diverged from its history", "run_id", info.RunID, "error", x.err)
		ev, cause = worlds.Event{Type: worlds.EventRunFailed, Error: ei}, x.err
	case outPanicked:
		perr := &PanicError{Value: fmt.Sprint(x.panicVal), Stack: string(x.stack)}
		ev, cause = worlds.Event{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{
			Message: perr.Error(), Type: "panic", Fatal: true, Stack: perr.Stack}}, perr
	default:
		cause = errors.New("workflow: workflow goroutine exited without returning (runtime.Goexit in workflow code?)")
		ev = worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(cause)}
	}
	if x.kind == outReturned && x.hist.cancelSeq == 0 {
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
	// replay once the run has ended.
	tail := append(pre, ev)
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
			return e.finish(ctx, info, x.hist.run, ev, cause)
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

// finish appends the terminal event of run.
func (e *engine) finish(ctx context.Context, info Info, run worlds.Run, ev worlds.Event, cause error) error {
	if _, err := e.world.Append(ctx, info.RunID, ev); err != nil {
		if errors.Is(err, worlds.ErrGone) {
			return nil // cancelled or finished by a concurrent delivery
		}
		if ev.Type == worlds.EventRunCompleted && errors.Is(err, worlds.ErrEventInvalid) {
			// The output could not be stored (too large for this World): fail instead.
			serr := &SerializationError{What: "workflow output", Err: err}
			return e.finish(ctx, info, run, worlds.Event{Type: worlds.EventRunFailed, Error: errorInfo(serr)}, serr)
		}
		return err
	}
	return e.ended(ctx, info, run, []worlds.Event{ev}, cause)
}

// ended goes on from the write of tail, which ended run with its last event:
// it tells observers, closes streams, queues the run continuing it, if any, and
// records the end in the parent of a child run.
func (e *engine) ended(ctx context.Context, info Info, run worlds.Run, tail []worlds.Event, cause error) error {
	ev := tail[len(tail)-1]
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

	if c := e.cache.step(runID, e.world, stepID); c != nil && c.name == step.StepName {
		// The run's cached execution queued this step: it has the function.
		return e.startAttempt(ctx, d, run, step, c)
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
		return e.finish(ctx, Info{RunID: runID, WorkflowName: run.WorkflowName}, run, worlds.Event{Type: worlds.EventRunFailed, Error: ei}, err)
	}
	return e.startAttempt(ctx, d, run, step, x.capture)
}

// startAttempt starts and runs the next attempt of step, whose function is c.
func (e *engine) startAttempt(ctx context.Context, d worlds.Delivery, run worlds.Run, step worlds.Step, c *captured) error {
	runID, stepID, wf := d.Input.RunID, d.Input.StepID, d.Input.WorkflowName
	now := e.clock()
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
	// A cancel of the run sent from this process interrupts the attempt.
	callCtx, cancelRun := context.WithCancelCause(actx)
	done := e.steps.add(info.RunID, cancelRun)
	cancelCall := context.CancelFunc(func() {})
	if c.opts.timeout > 0 {
		callCtx, cancelCall = context.WithTimeout(callCtx, c.opts.timeout)
	}
	start := e.clock()
	output, runErr := e.callStep(callCtx, info, c, input)
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
