package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// ErrTimerCancelled: Get was called on a timer cancelled before it fired.
var ErrTimerCancelled = errors.New("workflow: timer cancelled")

// Timer is a durable timer started with [NewTimer]: a future that resolves
// once its duration has passed. Wait for it with [Timer.Get], or race it
// against other futures with [Select].
type Timer struct {
	exec *execution
	id   string
	rec  *record
	err  error
	// fired: a timer of zero or negative duration, resolved without an operation.
	fired     bool
	cancelled bool
}

// NewTimer starts a durable timer of duration d and returns at once: the run is
// woken when it fires, from seconds to months later, surviving restarts, as by
// [Sleep] (Sleep(ctx, d) is NewTimer(ctx, d).Get(ctx)). A d of zero or less
// gives a timer that has fired already, and records nothing. A d beyond the
// World's maximum delay gives a timer whose Get returns a *[ConfigError].
func NewTimer(ctx Context, d time.Duration) *Timer {
	e, err := execOf(ctx)
	if err != nil {
		return &Timer{err: err}
	}
	if err := e.refused(ctx); err != nil {
		e.enter()
		return &Timer{err: err}
	}
	if d <= 0 {
		e.enter()
		return &Timer{exec: e, fired: true}
	}
	if maxd := e.world.Capabilities().MaxDelay; maxd > 0 && d > maxd {
		e.enter()
		return &Timer{exec: e, err: &ConfigError{Field: "timer duration", Value: d, Reason: fmt.Sprintf("longer than this World's maximum delay %s", maxd)}}
	}
	pos, rec := e.next(opWait, "")
	t := &Timer{exec: e, id: correlationID(opWait, pos, e.runID), rec: rec}
	if rec == nil {
		at := e.rt.clock().Add(d).UTC()
		e.pending = append(e.pending, pendingOp{kind: opWait, event: worlds.Event{
			Type: worlds.EventWaitCreated, CorrelationID: t.id, ResumeAt: &at,
		}})
	}
	return t
}

// Get waits until the timer fires. It returns an error matching
// [ErrTimerCancelled] once the timer was cancelled, by [Timer.Cancel] or by
// losing a [Select].
func (t *Timer) Get(ctx Context) error {
	e, err := t.enter(ctx)
	if err != nil {
		return err
	}
	for {
		ev, ok := t.ready()
		if ok && ev == nil {
			break // fired without an event, or cancelled
		}
		if err := e.interrupted(ctx, ev); err != nil {
			return err
		}
		if ok {
			e.consume(ev)
			break
		}
		e.block()
	}
	if t.cancelled {
		return fmt.Errorf("%w: %s", ErrTimerCancelled, t.id)
	}
	return nil
}

// Cancel cancels a timer that has not fired: Get then returns an error
// matching [ErrTimerCancelled], and the run is not woken for it (on Worlds that
// implement [worlds.DeliveryCanceller], such as the AWS World, its wake-up and
// schedule are deleted). The cancellation is recorded with the run's next
// write, as a wait_completed with Reason [worlds.WaitCancelled]. Cancelling a
// timer that fired or was cancelled does nothing.
func (t *Timer) Cancel(ctx Context) error {
	e, err := t.enter(ctx)
	if err != nil {
		return err
	}
	t.cancel(e)
	return nil
}

// enter starts an operation on the timer from ctx: the timer's own error, or
// ErrNotInWorkflow for a context of another execution.
func (t *Timer) enter(ctx Context) (*execution, error) {
	if t.err != nil {
		return nil, t.err
	}
	e, err := execFor(ctx, t.exec)
	if err != nil {
		return nil, err
	}
	e.enter()
	return e, nil
}

func (t *Timer) cancel(e *execution) {
	if t.fired || t.cancelled {
		return
	}
	if t.rec == nil {
		t.rec = e.hist.byID[t.id]
	}
	if t.rec != nil && t.rec.done != nil {
		if t.rec.done.Reason == worlds.WaitCancelled {
			t.cancelled = true // a replay: the log has the cancellation
		}
		return
	}
	t.cancelled = true
	e.marks = append(e.marks, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: t.id, Reason: worlds.WaitCancelled})
}

// ready reports whether the timer has fired or was cancelled, with the event
// that says so (nil when none does).
func (t *Timer) ready() (*worlds.Event, bool) {
	if t.fired || t.cancelled {
		return nil, true
	}
	if t.rec == nil {
		t.rec = t.exec.hist.byID[t.id]
	}
	if t.rec == nil || t.rec.done == nil {
		return nil, false
	}
	if t.rec.done.Reason == worlds.WaitCancelled {
		// Cancelled by the code earlier in the log; a replay reaches the Cancel again.
		return nil, false
	}
	return t.rec.done, true
}

// errNilFuture is what a nil future reports to Select.
var errNilFuture = errors.New("workflow: nil future")

func (t *Timer) selectable() (*execution, error) {
	if t == nil {
		return nil, errNilFuture
	}
	return t.exec, t.err
}

func (t *Timer) readyEvent() (*worlds.Event, bool) {
	if t.err != nil {
		return nil, true
	}
	return t.ready()
}

// Selectable is what [Select] waits for: a step's [Future] (from [Go], or the
// Future of a [ChildRun]), a [Timer], or a [Hook], whose next payload it
// waits for.
type Selectable interface {
	selectable() (*execution, error)
	// readyEvent reports whether the future is resolved, with the log event that
	// resolved it (nil for one resolved without an event, such as an error).
	readyEvent() (*worlds.Event, bool)
}

// Select waits until one of futures is resolved and returns its index; get its
// result with its Get (or Receive, for a hook), which then returns at once.
// When several are resolved, it picks the one resolved first in the run's log,
// so every replay picks the same one; futures that resolved without an event
// (an error, a timer of no duration) come first, in argument order.
//
// Timers among futures that lost the race are cancelled (see [Timer.Cancel]);
// the other futures are untouched: a step goes on running, and a hook keeps its
// payloads for a later Receive. A hook receive with a timeout is one line:
//
//	i, err := workflow.Select(ctx, hook, workflow.NewTimer(ctx, 24*time.Hour)) // i == 0: a payload came
//
// A timer that was refused when it was created (a delay past the World's
// limit: the AWS World without EventBridge Scheduler takes 15 minutes at most)
// wins at once, and Select returns its index with its error, so the refusal is
// not taken for a timeout.
//
// It returns a *[ConfigError] when futures is empty or holds nil,
// [ErrNotInWorkflow] for a future of another run's execution, and an error
// matching [ErrCancelled] once the run is cancelled (see [WithoutCancel]).
func Select(ctx Context, futures ...Selectable) (int, error) {
	e, err := execOf(ctx)
	if err != nil {
		return -1, err
	}
	e.enter()
	if len(futures) == 0 {
		return -1, &ConfigError{Field: "Select futures", Value: 0, Reason: "at least one future is required"}
	}
	for i, f := range futures {
		var x *execution
		var ferr error
		if f != nil {
			x, ferr = f.selectable()
		}
		switch {
		case f == nil || errors.Is(ferr, errNilFuture):
			return -1, &ConfigError{Field: "Select futures", Value: i, Reason: "future is nil"}
		case ferr == nil && x != e:
			return -1, ErrNotInWorkflow
		}
	}
	for {
		win := -1
		var first *worlds.Event
		for i, f := range futures {
			ev, ok := f.readyEvent()
			if !ok {
				continue
			}
			if ev == nil {
				win, first = i, nil
				break
			}
			if win < 0 || ev.Seq < first.Seq {
				win, first = i, ev
			}
		}
		if win < 0 || first != nil {
			// Nothing resolved yet, or the first resolved by an event: the run's
			// cancellation interrupts Select unless that event came before it.
			if err := e.interrupted(ctx, first); err != nil {
				return -1, err
			}
		}
		if win >= 0 {
			if first != nil {
				e.consume(first)
			}
			for i, f := range futures {
				if t, ok := f.(*Timer); ok && i != win && t.err == nil {
					t.cancel(e)
				}
			}
			if t, ok := futures[win].(*Timer); ok && t.err != nil {
				// A timer refused at its creation must not pass for one that fired.
				return win, t.err
			}
			return win, nil
		}
		e.block()
	}
}

func (f *Future[O]) selectable() (*execution, error) {
	if f == nil {
		return nil, errNilFuture
	}
	return f.exec, f.err
}

func (f *Future[O]) readyEvent() (*worlds.Event, bool) {
	if f.err != nil {
		return nil, true
	}
	if f.rec == nil {
		f.rec = f.exec.hist.byID[f.id]
	}
	if f.rec == nil || f.rec.done == nil {
		return nil, false
	}
	return f.rec.done, true
}

func (h *Hook[T]) selectable() (*execution, error) {
	if h == nil {
		return nil, errNilFuture
	}
	return h.exec, nil
}

func (h *Hook[T]) readyEvent() (*worlds.Event, bool) {
	if h.disposed {
		return nil, true
	}
	if h.rec == nil {
		h.rec = h.exec.hist.byID[h.ID]
	}
	switch {
	case h.rec == nil:
		return nil, false
	case h.rec.created.Type == worlds.EventHookConflict:
		return &h.rec.created, true
	case h.next < len(h.rec.received):
		return &h.rec.received[h.next], true
	}
	return nil, false
}
