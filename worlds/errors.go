package worlds

import (
	"errors"
	"fmt"
)

// Error kinds. Every error a World returns for a rejected event or a missing entity
// matches exactly one of these with errors.Is, so callers can branch on the kind
// without knowing the World.
var (
	// ErrEventInvalid: the event is malformed or too large to store. Retrying the same
	// event cannot succeed.
	ErrEventInvalid = errors.New("worlds: invalid event")
	// ErrNotFound: the run, step, hook or stream named does not exist.
	ErrNotFound = errors.New("worlds: not found")
	// ErrConflict: the event contradicts the current state (a run created twice, a step
	// completed twice, a hook token owned by another hook).
	ErrConflict = errors.New("worlds: conflict")
	// ErrGone: the target has finished and accepts no more events (a completed, failed
	// or cancelled run; a disposed hook; a closed stream).
	ErrGone = errors.New("worlds: gone")
	// ErrTooEarly: the event is valid but not yet: a wait completed before its resume
	// time (other than cancelled, see [WaitCancelled]), a step started again before
	// its retry time.
	ErrTooEarly = errors.New("worlds: too early")
)

// Specific errors, each matching its kind with errors.Is as well as itself.
var (
	ErrRunNotFound      = kindError("run not found", ErrNotFound)
	ErrStepNotFound     = kindError("step not found", ErrNotFound)
	ErrHookNotFound     = kindError("hook not found", ErrNotFound)
	ErrWaitNotFound     = kindError("wait not found", ErrNotFound)
	ErrStreamNotFound   = kindError("stream not found", ErrNotFound)
	ErrRunExists        = kindError("run already exists", ErrConflict)
	ErrRunFinished      = kindError("run already finished", ErrGone)
	ErrRunNotBlocked    = kindError("run is not blocked", ErrConflict)
	ErrStepExists       = kindError("step already exists", ErrConflict)
	ErrStepFinished     = kindError("step already finished", ErrConflict)
	ErrStepNotRunning   = kindError("step is not running", ErrConflict)
	ErrHookExists       = kindError("hook already exists", ErrConflict)
	ErrHookDisposed     = kindError("hook disposed", ErrGone)
	ErrTokenConflict    = kindError("hook token owned by another hook", ErrConflict)
	ErrWaitExists       = kindError("wait already exists", ErrConflict)
	ErrWaitCompleted    = kindError("wait already completed", ErrConflict)
	ErrWaitNotDue       = kindError("wait not yet due", ErrTooEarly)
	ErrRetryNotDue      = kindError("step retry not yet due", ErrTooEarly)
	ErrStreamClosed     = kindError("stream closed", ErrGone)
	ErrItemTooLarge     = kindError("item exceeds the World's size limit", ErrEventInvalid)
	ErrTooManyChunks    = kindError("too many chunks in one stream write", ErrEventInvalid)
	ErrInvalidArgument  = errors.New("worlds: invalid argument")
	ErrAppendContention = errors.New("worlds: append lost the optimistic-concurrency race too many times")
	ErrNoRunner         = errors.New("worlds: no runner registered for workflow")
)

type kindErr struct {
	msg  string
	kind error
}

func kindError(msg string, kind error) error { return &kindErr{msg: "worlds: " + msg, kind: kind} }

func (e *kindErr) Error() string        { return e.msg }
func (e *kindErr) Is(target error) bool { return target == e.kind }

// EventError describes an event a World rejected. It matches its Kind and its
// Cause with errors.Is.
type EventError struct {
	Kind          error // one of the kinds: ErrEventInvalid, ErrNotFound, ErrConflict, ErrGone, ErrTooEarly
	Cause         error // a specific sentinel such as ErrStepFinished, or nil
	RunID         string
	Type          EventType
	CorrelationID string
	Field         string // for ErrEventInvalid: the offending field
	Reason        string
}

func (e *EventError) Error() string {
	msg := fmt.Sprintf("worlds: %s event", e.Type)
	if e.RunID != "" {
		msg += " for run " + e.RunID
	}
	if e.CorrelationID != "" {
		msg += " (" + e.CorrelationID + ")"
	}
	switch {
	case e.Cause != nil:
		msg += ": " + e.Cause.Error()
	case e.Kind != nil:
		msg += ": " + e.Kind.Error()
	}
	if e.Field != "" {
		msg += ": field " + e.Field
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is matches the error's kind.
func (e *EventError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the specific cause, so errors.Is also matches it.
func (e *EventError) Unwrap() error { return e.Cause }

// KindOf returns the error kind err matches (ErrEventInvalid, ErrNotFound,
// ErrConflict, ErrGone or ErrTooEarly), or nil when err is not a World's
// rejection but a failure to answer (a timeout, a throttle), which may succeed
// when retried.
func KindOf(err error) error {
	for _, k := range []error{ErrEventInvalid, ErrNotFound, ErrConflict, ErrGone, ErrTooEarly} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

func rejected(ev *Event, cause error, reason string) error {
	return &EventError{Kind: KindOf(cause), Cause: cause, RunID: ev.RunID, Type: ev.Type, CorrelationID: ev.CorrelationID, Reason: reason}
}

// ArgumentError reports a bad argument to a World method or constructor, naming the
// field and the value. It matches [ErrInvalidArgument].
type ArgumentError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("worlds: invalid %s %v: %s", e.Field, e.Value, e.Reason)
}

// Is matches [ErrInvalidArgument].
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }
