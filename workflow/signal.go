package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-go/cairn/worlds"
)

// Signal sends a signal named name with payload (encoded as JSON) to run runID.
// The signal is buffered in the run's log until the run's code reads it with a
// [SignalChannel] of that name, in the order signals were sent; one sent before
// the code asks, even before the run started, waits there. On the embedded
// World it costs one write.
//
// An unknown run returns an error matching [ErrRunNotFound]; a run that has
// ended, one matching [ErrRunEnded] (and worlds.ErrRunFinished).
func Signal(ctx context.Context, c *Client, runID, name string, payload any) error {
	if c == nil {
		return &ConfigError{Field: "client", Value: nil, Reason: "required"}
	}
	raw, err := encode("signal "+quote(name)+" payload", payload, c.eng.maxPayload)
	if err != nil {
		return err
	}
	if err := worlds.SendSignal(ctx, c.eng.world, runID, name, raw); err != nil {
		return signalError(runID, name, err)
	}
	return nil
}

// SignalWithStart starts a run of w with input in unless a run with its ID
// ([WithRunID]) exists, and signals the run, either way: the run's code reads
// the signal with a [SignalChannel] named name. The start and the signal are
// one write when the run is created; two concurrent calls with one run ID make
// one run, which receives both signals. The input of a call that finds the run
// started is not used.
//
// Without WithRunID every call starts a new run. An existing run of another
// workflow returns an error matching worlds.ErrRunExists; an existing run that
// has ended, one matching [ErrRunEnded].
func SignalWithStart[I, O any](ctx context.Context, c *Client, w Workflow[I, O], in I, name string, payload any, opts ...StartOption) (*Run[O], error) {
	if c == nil {
		return nil, &ConfigError{Field: "client", Value: nil, Reason: "required"}
	}
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	wf := workflowName(w)
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("workflow: signal-with-start %s: %w", wf, err)
	}
	if err := validateValue(wf, in); err != nil {
		return nil, fmt.Errorf("workflow: signal-with-start %s: %w", wf, err)
	}
	raw, err := encode("workflow input", in, c.eng.maxPayload)
	if err != nil {
		return nil, err
	}
	if err := worlds.ValidateJSON("input", raw); err != nil {
		return nil, fmt.Errorf("workflow: signal-with-start %s: %w", wf, err)
	}
	sig, err := encode("signal "+quote(name)+" payload", payload, c.eng.maxPayload)
	if err != nil {
		return nil, err
	}
	id := o.id
	if id == "" {
		id = c.eng.ids.NewID()
	}
	if _, err := worlds.SignalWithStart(ctx, c.eng.world, id, wf, raw, o.attrs, name, sig); err != nil {
		return nil, signalError(id, name, err)
	}
	return &Run[O]{c: c, id: id}, nil
}

// signalError names the signal and run in err, adding ErrRunEnded to a refusal
// because the run finished.
func signalError(runID, name string, err error) error {
	if errors.Is(err, worlds.ErrRunFinished) {
		return fmt.Errorf("workflow: signal %q to run %s: %w: %w", name, runID, ErrRunEnded, err)
	}
	return fmt.Errorf("workflow: signal %q to run %s: %w", name, runID, err)
}

// SignalChannel reads the signals named Name sent to the run, in the order they
// were sent, decoded from JSON into T. Channels of one name share their
// position: a signal read through one is not read again through another.
// It is [Selectable]: in [Select] it is ready when an unread signal is in the
// log, and [SignalChannel.Receive] then returns it at once.
type SignalChannel[T any] struct {
	// Name is the signal name the channel reads.
	Name string
	exec *execution
	err  error
}

// NewSignalChannel returns the channel of the run's signals named name. A name
// must be 1 to worlds.MaxSignalNameLength bytes; another one makes every read
// return a *[ConfigError].
func NewSignalChannel[T any](ctx Context, name string) *SignalChannel[T] {
	e, err := execOf(ctx)
	if err != nil {
		return &SignalChannel[T]{Name: name, err: err}
	}
	e.enter()
	c := &SignalChannel[T]{Name: name, exec: e}
	if name == "" || len(name) > worlds.MaxSignalNameLength {
		c.err = &ConfigError{Field: "signal name", Value: name, Reason: fmt.Sprintf("must be 1 to %d bytes", worlds.MaxSignalNameLength)}
	}
	return c
}

// Receive waits for the next signal and returns its payload. A payload that
// does not decode into T is consumed and returned as a *[SignalPayloadError],
// so the code can go on to the next signal; the run does not fail. Once the
// run is cancelled it returns an error matching [ErrCancelled] (see
// [WithoutCancel]).
func (c *SignalChannel[T]) Receive(ctx Context) (T, error) {
	var zero T
	e, err := c.enter(ctx)
	if err != nil {
		return zero, err
	}
	for {
		ev, ok := c.readyEvent()
		if err := e.interrupted(ctx, ev); err != nil {
			return zero, err
		}
		if ok {
			e.consume(ev)
			return c.take(e, ev)
		}
		e.block()
	}
}

// TryReceive returns the next signal if one reached the run before the point
// the code has reached in the run's log, and ok false otherwise, without
// blocking. A signal sent later is read by a later call, once the code has
// moved past it (after a step, a timer, a hook payload or a Receive); every
// replay of the run gives each call the same answer. Errors are those of
// [SignalChannel.Receive].
func (c *SignalChannel[T]) TryReceive(ctx Context) (T, bool, error) {
	var zero T
	e, err := c.enter(ctx)
	if err != nil {
		return zero, false, err
	}
	ev, ok := c.readyEvent()
	if !ok || ev.Seq > e.consumed {
		if err := e.interrupted(ctx, nil); err != nil {
			return zero, false, err
		}
		return zero, false, nil
	}
	if err := e.interrupted(ctx, ev); err != nil {
		return zero, false, err
	}
	v, err := c.take(e, ev)
	return v, true, err
}

func (c *SignalChannel[T]) enter(ctx Context) (*execution, error) {
	if c.err != nil {
		return nil, c.err
	}
	e, err := execFor(ctx, c.exec)
	if err != nil {
		return nil, err
	}
	e.enter()
	return e, nil
}

// take reads ev, the next signal, and moves the channel past it.
func (c *SignalChannel[T]) take(e *execution, ev *worlds.Event) (T, error) {
	if e.signalNext == nil {
		e.signalNext = map[string]int{}
	}
	e.signalNext[c.Name]++
	var v T
	if err := decode(ev.Payload, &v); err != nil {
		var zero T
		return zero, &SignalPayloadError{Name: c.Name, Seq: ev.Seq, Err: err}
	}
	return v, nil
}

func (c *SignalChannel[T]) selectable() (*execution, error) {
	if c == nil {
		return nil, errNilFuture
	}
	return c.exec, c.err
}

func (c *SignalChannel[T]) readyEvent() (*worlds.Event, bool) {
	if c.err != nil {
		return nil, true
	}
	e := c.exec
	sigs := e.hist.signals[c.Name]
	if n := e.signalNext[c.Name]; n < len(sigs) {
		return &sigs[n], true
	}
	return nil, false
}

// SignalPayloadError is returned by a [SignalChannel] read for a signal whose
// payload does not decode into the channel's type. The signal is consumed. It
// matches [ErrSerialization].
type SignalPayloadError struct {
	// Name is the signal's name and Seq its position in the run's log.
	Name string
	Seq  int64
	Err  error
}

func (e *SignalPayloadError) Error() string {
	return fmt.Sprintf("workflow: signal %q (event %d): payload does not decode: %v", e.Name, e.Seq, e.Err)
}

// Unwrap returns ErrSerialization and the decoding error.
func (e *SignalPayloadError) Unwrap() []error { return []error{ErrSerialization, e.Err} }
