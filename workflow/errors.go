package workflow

import (
	"errors"
	"fmt"

	"github.com/cairn-go/cairn/worlds"
)

// Sentinel errors of the runtime. Each typed error below matches one of them with
// errors.Is.
var (
	// ErrNotInWorkflow: a workflow operation was called with a Context that is not the
	// one of a live workflow execution (for example from a goroutine after the
	// workflow returned or suspended).
	ErrNotInWorkflow = errors.New("workflow: not called from workflow code")
	// ErrNotInStep: a step-only API such as [WriteStream] was called outside a step.
	ErrNotInStep = errors.New("workflow: not called from a step")
	// ErrNondeterminism: the workflow code diverged from its recorded history.
	ErrNondeterminism = errors.New("workflow: nondeterministic workflow code")
	// ErrSerialization: a value could not be encoded to or decoded from JSON.
	ErrSerialization = errors.New("workflow: serialization failed")
	// ErrTooLarge: an input, output or payload exceeds the size limit.
	ErrTooLarge = errors.New("workflow: payload too large")
	// ErrStepFailed: a step failed for good (fatal error or attempts exhausted).
	ErrStepFailed = errors.New("workflow: step failed")
	// ErrRunFailed: the run ended failed.
	ErrRunFailed = errors.New("workflow: run failed")
	// ErrCancelled: this run's cancellation reached its code: the blocking
	// operation that returns it was interrupted, and operations started after it
	// do not run (unless called with [WithoutCancel]). Matched by *[CancelledError].
	ErrCancelled = errors.New("workflow: cancelled")
	// ErrRunCancelled: the run was cancelled.
	ErrRunCancelled = errors.New("workflow: run cancelled")
	// ErrHookConflict: another active hook owns the token a hook asked for.
	ErrHookConflict = errors.New("workflow: hook token owned by another hook")
	// ErrHookDisposed: Receive was called on a hook the workflow disposed.
	ErrHookDisposed = errors.New("workflow: hook disposed")
	// ErrRunNotFound is returned for a run ID no run has (it is the World's
	// worlds.ErrRunNotFound, so either matches).
	ErrRunNotFound = worlds.ErrRunNotFound
	// ErrRunEnded is returned by [Signal] and [SignalWithStart] for a run that
	// has ended and so can read no more signals; the error also matches
	// worlds.ErrRunFinished.
	ErrRunEnded = errors.New("workflow: run ended")
	// ErrUnknownWorkflow: a delivery or call names a workflow no runner knows.
	ErrUnknownWorkflow = errors.New("workflow: unknown workflow")
	// ErrInvalidConfig: a constructor or option got a bad value.
	ErrInvalidConfig = errors.New("workflow: invalid configuration")
)

// FatalError marks a step error that must not be retried. Create one with [Fatal].
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal wraps err so the step returning it fails at once instead of retrying.
// Fatal(nil) returns nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &FatalError{Err: err}
}

// IsFatal reports whether err stops retries: it wraps a [FatalError] or a
// non-retryable [ApplicationError].
func IsFatal(err error) bool {
	var f *FatalError
	if errors.As(err, &f) {
		return true
	}
	var a *ApplicationError
	return errors.As(err, &a) && a.NonRetryable
}

// NondeterminismError reports where workflow code diverged from its history.
type NondeterminismError struct {
	RunID string
	// Position is the 1-based index of the operation in call order.
	Position int
	// Expected describes the recorded operation ("step \"charge\""), or "nothing" when
	// the history ends there.
	Expected string
	// Actual describes what the code did ("sleep", "return").
	Actual string
}

func (e *NondeterminismError) Error() string {
	return fmt.Sprintf("workflow: nondeterministic workflow code in run %s at operation %d: history has %s, code asked for %s",
		e.RunID, e.Position, e.Expected, e.Actual)
}

// Is matches [ErrNondeterminism].
func (e *NondeterminismError) Is(target error) bool { return target == ErrNondeterminism }

// SerializationError names the value that could not be encoded or decoded.
type SerializationError struct {
	// What names the value: "workflow input", "step \"charge\" output", ...
	What string
	Err  error
}

func (e *SerializationError) Error() string {
	return fmt.Sprintf("workflow: %s: %v", e.What, e.Err)
}

// Is matches [ErrSerialization], or [ErrTooLarge] when the value was too big.
func (e *SerializationError) Is(target error) bool {
	if target == ErrSerialization {
		return true
	}
	return target == ErrTooLarge && errors.Is(e.Err, ErrTooLarge)
}

// Unwrap returns the cause.
func (e *SerializationError) Unwrap() error { return e.Err }

// StepError is what [Step] and [Future.Get] return for a step that failed for good.
// It carries the persisted error, so it reads the same on replay as live, and
// unwraps to an [ApplicationError] built from it (type name, message, details)
// and, when the step's error was of a type listed in [Config].ErrorTypes, to a
// value of that type decoded from the details: errors.As finds either.
type StepError struct {
	StepID, StepName string
	Info             worlds.ErrorInfo
	reg              *errorRegistry
}

func (e *StepError) Error() string {
	return fmt.Sprintf("workflow: step %q (%s) failed: %s", e.StepName, e.StepID, e.Info.Message)
}

// Is matches [ErrStepFailed].
func (e *StepError) Is(target error) bool { return target == ErrStepFailed }

// Unwrap returns the persisted error info, the [ApplicationError] it records and,
// for a registered error type, the decoded value.
func (e *StepError) Unwrap() []error { return unwrapInfo(&e.Info, e.reg) }

// RunError is what [Run.Result] returns for a failed or cancelled run.
type RunError struct {
	RunID  string
	Status worlds.RunStatus
	// Info is the persisted failure; for a cancelled run its Message is the reason.
	Info worlds.ErrorInfo
	reg  *errorRegistry
}

func (e *RunError) Error() string {
	if e.Status == worlds.RunCancelled {
		return fmt.Sprintf("workflow: run %s cancelled: %s", e.RunID, e.Info.Message)
	}
	return fmt.Sprintf("workflow: run %s failed: %s", e.RunID, e.Info.Message)
}

// Is matches [ErrRunFailed] or [ErrRunCancelled].
func (e *RunError) Is(target error) bool {
	return (target == ErrRunFailed && e.Status == worlds.RunFailed) ||
		(target == ErrRunCancelled && e.Status == worlds.RunCancelled)
}

// Unwrap returns the persisted error info, the [ApplicationError] it records
// (the type name and details of the error the run failed with, which is a failed
// step's when the code returned that step's error) and, for a registered error
// type, the decoded value.
func (e *RunError) Unwrap() []error { return unwrapInfo(&e.Info, e.reg) }

// ConfigError names a bad configuration field and value. It matches [ErrInvalidConfig].
type ConfigError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("workflow: invalid %s %v: %s", e.Field, e.Value, e.Reason)
}

// Is matches [ErrInvalidConfig].
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// CancelledError is what workflow operations return once the run was asked to
// stop with [Client.Cancel] (or the RPC's runs.cancel, or the web UI). It
// matches [ErrCancelled]. Return it, after any cleanup under
// [WithoutCancel], and the run ends cancelled.
type CancelledError struct {
	RunID  string
	Reason string
}

func (e *CancelledError) Error() string {
	return fmt.Sprintf("workflow: run %s cancelled: %s", e.RunID, e.Reason)
}

// Is matches [ErrCancelled].
func (e *CancelledError) Is(target error) bool { return target == ErrCancelled }
