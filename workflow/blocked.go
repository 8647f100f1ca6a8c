package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// ErrWorkflowCode: the workflow code itself failed (it panicked, diverged from
// its run's log, or did not yield), as opposed to a step failing or the code
// returning an error. Matched by *[DeadlockError] and *[BlockedError].
var ErrWorkflowCode = errors.New("workflow: workflow code failed")

// CodeErrorPolicy says what happens to a run whose workflow code fails: it
// panics, diverges from the run's log ([ErrNondeterminism]), does not yield
// within [Config.DeadlockTimeout], or ends its goroutine with runtime.Goexit.
// A step's failure, or an error the code returns, is not a code error: the code
// decides what it means.
type CodeErrorPolicy int

const (
	// BlockOnCodeError, the default, keeps the run running, flagged as blocked
	// ([worlds.Run].Blocked, recorded with a run_blocked event holding the
	// error and its stack), and delivers it again with capped backoff
	// ([Config.BlockedRetry]). Nothing the failing code reached is recorded,
	// so deploying fixed code resumes the run from its log, with no step lost or
	// run twice; its first delivery records run_unblocked. A blocked run asked
	// to stop ends cancelled without running its cleanup.
	BlockOnCodeError CodeErrorPolicy = iota
	// FailOnCodeError fails the run at once, for good (run_failed, Fatal).
	FailOnCodeError
)

func (p CodeErrorPolicy) String() string {
	switch p {
	case BlockOnCodeError:
		return "BlockOnCodeError"
	case FailOnCodeError:
		return "FailOnCodeError"
	}
	return fmt.Sprintf("CodeErrorPolicy(%d)", int(p))
}

func (p CodeErrorPolicy) validate(field string) error {
	if p != BlockOnCodeError && p != FailOnCodeError {
		return &ConfigError{Field: field, Value: int(p), Reason: "must be BlockOnCodeError or FailOnCodeError"}
	}
	return nil
}

// BlockedRetry is the backoff of a blocked run's deliveries. Each delivery is
// due after the time the run has been blocked so far, at least Initial and at
// most Max, so the delay doubles from Initial up to Max.
type BlockedRetry struct {
	// Initial is the first delay; zero means 1s.
	Initial time.Duration
	// Max caps the delay; zero means 10 minutes.
	Max time.Duration
}

// Default blocked-run backoff, for the zero fields of [BlockedRetry].
const (
	DefaultBlockedRetryInitial = time.Second
	DefaultBlockedRetryMax     = 10 * time.Minute
)

func (b BlockedRetry) withDefaults() (BlockedRetry, error) {
	switch {
	case b.Initial < 0:
		return b, &ConfigError{Field: "Config.BlockedRetry.Initial", Value: b.Initial, Reason: "must not be negative"}
	case b.Max < 0:
		return b, &ConfigError{Field: "Config.BlockedRetry.Max", Value: b.Max, Reason: "must not be negative"}
	}
	if b.Initial == 0 {
		b.Initial = DefaultBlockedRetryInitial
	}
	if b.Max == 0 {
		b.Max = DefaultBlockedRetryMax
	}
	if b.Max < b.Initial {
		return b, &ConfigError{Field: "Config.BlockedRetry.Max", Value: b.Max, Reason: fmt.Sprintf("must be at least Initial (%s)", b.Initial)}
	}
	return b, nil
}

// delay is the wait before the next delivery of a run blocked for so long.
func (b BlockedRetry) delay(blockedFor time.Duration) time.Duration {
	return min(max(blockedFor, b.Initial), b.Max)
}

// BlockedError describes a run blocked on an error of its workflow code, from
// its [worlds.Run].Blocked. It matches [ErrWorkflowCode].
type BlockedError struct {
	RunID string
	// Blocked holds the code's error, with its stack, and since when.
	Blocked worlds.Blocked
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("workflow: run %s is blocked on a workflow code error since %s: %s",
		e.RunID, e.Blocked.Since.Format(time.RFC3339), e.Blocked.Error.Message)
}

// Is matches [ErrWorkflowCode].
func (e *BlockedError) Is(target error) bool { return target == ErrWorkflowCode }

// Blocked returns a *[BlockedError] when run is blocked on an error of its
// workflow code, and nil otherwise.
func Blocked(run worlds.Run) error {
	if run.Blocked == nil {
		return nil
	}
	return &BlockedError{RunID: run.RunID, Blocked: *run.Blocked}
}

// UseOption configures a workflow registered with [Use].
type UseOption func(*useOptions)

type useOptions struct {
	codeErrors *CodeErrorPolicy
}

// OnCodeError sets the [CodeErrorPolicy] of one workflow, over
// [Config.CodeErrors]. A policy that is not one of the constants makes the
// workflow's deliveries fail with a *[ConfigError].
func OnCodeError(p CodeErrorPolicy) UseOption {
	return func(o *useOptions) { o.codeErrors = &p }
}

// policyOf is the code error policy for runs of f.
func (e *engine) policyOf(f flow) CodeErrorPolicy {
	if r, ok := f.(interface{ codeErrors() *CodeErrorPolicy }); ok {
		if p := r.codeErrors(); p != nil {
			return *p
		}
	}
	return e.codeErrors
}

// blockedPrefix starts the fixed ID of a blocked run's next delivery.
const blockedPrefix = "blocked-"

func blockedID(runID string) string { return blockedPrefix + runID }

// blockedRetry reports whether d is a blocked run's own redelivery, which
// queues again what the run waits for: the deliveries of its steps that came
// while it was blocked were acknowledged without running.
func blockedRetry(d worlds.Delivery) bool {
	return d.Input.Kind == worlds.DeliverWorkflow && strings.HasPrefix(d.ID, blockedPrefix)
}

// codeError is the error of an execution whose workflow code failed (any
// outcome but a return or a suspension), in Go and persisted form.
func (x *execution) codeError() (error, *worlds.ErrorInfo) {
	var err error
	ei := &worlds.ErrorInfo{Fatal: true}
	switch x.outcome() {
	case outHung:
		var de *DeadlockError
		errors.As(x.hung, &de)
		err, ei.Type, ei.Stack = x.hung, "deadlock", de.Stack
	case outPanicked:
		err = &PanicError{Value: fmt.Sprint(x.panicVal), Stack: string(x.stack)}
		ei.Type, ei.Stack = "panic", string(x.stack)
	case outDiverged:
		err, ei.Type, ei.Stack = x.err, "nondeterminism", string(x.stack)
		if errors.Is(x.err, ErrUnsupportedVersion) {
			ei.Type = "version"
		}
	default:
		err, ei.Type = errors.New("workflow: workflow goroutine exited without returning (runtime.Goexit in workflow code?)"), "goexit"
	}
	ei.Message = err.Error()
	return err, ei
}

// deadlocked reports whether x was given up on for not yielding, rather than
// because its delivery's context ended.
func (x *execution) deadlocked() bool {
	var de *DeadlockError
	return errors.As(x.hung, &de)
}

// blockRun records that the workflow code of the run of h failed with cause
// (persisted as ei) and queues the run's next delivery after the backoff. The
// write holds run_started when the run was pending (in head), the carried step
// outcome, if any, and run_blocked unless the run is blocked on the same error
// already; nothing the failing code reached is recorded. A run asked to stop
// ends cancelled instead, since its code cannot run its cleanup.
func (e *engine) blockRun(ctx context.Context, info Info, h *history, head []worlds.Event, c *carried, cause error, ei *worlds.ErrorInfo) error {
	run := h.run
	var evs []worlds.Event
	for _, ev := range head {
		if ev.Type == worlds.EventRunStarted {
			evs = append(evs, ev) // not run_unblocked: the code failed again
		}
	}
	if c != nil {
		evs = append(evs, c.ev)
	}
	var end *worlds.Event
	if h.cancelSeq > 0 {
		end = &worlds.Event{Type: worlds.EventRunCancelled, Reason: h.cancelReason}
		evs = append(evs, *end)
		e.log.WarnContext(ctx, "workflow code failed in a run asked to stop: it ends cancelled without its cleanup",
			"run_id", info.RunID, "workflow", info.WorkflowName, "error", cause)
	} else {
		if b := run.Blocked; b == nil || b.Error.Message != ei.Message || b.Error.Type != ei.Type {
			evs = append(evs, worlds.Event{Type: worlds.EventRunBlocked, Error: ei})
		}
		e.log.ErrorContext(ctx, "workflow code failed: the run is blocked until code that gets past the failure is deployed",
			"run_id", info.RunID, "workflow", info.WorkflowName, "error", cause)
	}
	if len(evs) > 0 {
		if _, err := e.world.Append(ctx, info.RunID, evs...); err != nil {
			if c != nil {
				return c.settle(e, err)
			}
			switch {
			case errors.Is(err, worlds.ErrConflict):
				// The log moved on meanwhile: replay it.
				return e.queueWorkflow(ctx, info.WorkflowName, info.RunID, time.Time{}, "")
			case errors.Is(err, worlds.ErrGone):
				return nil
			}
			return err
		}
		if c != nil {
			c.stored(e)
		}
	}
	if end != nil {
		return e.ended(ctx, info, run, []worlds.Event{*end}, &CancelledError{RunID: info.RunID, Reason: h.cancelReason})
	}
	now := e.clock()
	since := now
	if run.Blocked != nil {
		since = run.Blocked.Since
	}
	return e.queueWorkflow(ctx, info.WorkflowName, info.RunID, now.Add(e.blockedRetry.delay(now.Sub(since))), blockedID(info.RunID))
}

// captureFailed handles a step delivery whose replay did not reach the step:
// the workflow code failed on the way (or the step is no longer called). The
// run is blocked or failed by its policy; a blocked run's redelivery queues the
// step again.
func (e *engine) captureFailed(ctx context.Context, run worlds.Run, x *execution) error {
	info := Info{RunID: run.RunID, WorkflowName: run.WorkflowName}
	if x.outcome() == outHung && !x.deadlocked() {
		return x.hung // the delivery's context ended
	}
	cause, ei := x.codeError()
	if x.policy == BlockOnCodeError {
		return e.blockRun(ctx, info, x.hist, nil, nil, cause, ei)
	}
	return e.finish(ctx, info, run, nil, worlds.Event{Type: worlds.EventRunFailed, Error: ei}, cause)
}
