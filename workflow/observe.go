package workflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Observer receives live runtime events, for tracing and metrics. It is never called
// for history a workflow replays: RunStarted fires once per run, in the delivery that
// starts it (before run_started is appended with the first write the code reaches;
// a delivery that loses the race to start the run to a concurrent one reports it
// too), and StepStarted/StepFinished once per live attempt. An Observer that also
// implements [CacheObserver] is told how the run cache serves deliveries. Each
// callback gets the context of the work it describes and returns the context that
// work continues with, so a tracer can start a span in a Started callback and end
// it in the matching Finished callback. Callbacks run on the delivery's goroutine
// and must not block; they must not call workflow operations.
//
// Attempts and logical outcomes are reported apart: every attempt produces one
// StepStarted and one StepFinished; only the StepFinished whose outcome is
// StepCompleted or StepFailed ends the step. After a crash between a step's side
// effect and its recorded completion, the attempt runs again and is reported again.
type Observer interface {
	RunStarted(ctx context.Context, info Info) context.Context
	// RunFinished reports a run that completed (err nil), failed or was cancelled.
	RunFinished(ctx context.Context, info Info, status worlds.RunStatus, err error) context.Context
	StepStarted(ctx context.Context, info Info) context.Context
	StepFinished(ctx context.Context, info Info, outcome StepOutcome) context.Context
}

// StepResult says how one step attempt ended.
type StepResult string

// Step attempt results.
const (
	StepCompleted StepResult = "completed" // the step succeeded; logical completion
	StepRetrying  StepResult = "retrying"  // the attempt failed and another is scheduled
	StepFailed    StepResult = "failed"    // fatal error or attempts exhausted; logical failure
)

// StepOutcome describes a finished step attempt.
type StepOutcome struct {
	Result   StepResult
	Duration time.Duration
	// Err is the attempt's error; nil when Result is StepCompleted.
	Err error
	// RetryAt is when the next attempt is due, for StepRetrying.
	RetryAt time.Time
}

// NopObserver implements [Observer] doing nothing; embed it to implement only some
// callbacks.
type NopObserver struct{}

// RunStarted returns ctx.
func (NopObserver) RunStarted(ctx context.Context, _ Info) context.Context { return ctx }

// RunFinished returns ctx.
func (NopObserver) RunFinished(ctx context.Context, _ Info, _ worlds.RunStatus, _ error) context.Context {
	return ctx
}

// StepStarted returns ctx.
func (NopObserver) StepStarted(ctx context.Context, _ Info) context.Context { return ctx }

// StepFinished returns ctx.
func (NopObserver) StepFinished(ctx context.Context, _ Info, _ StepOutcome) context.Context {
	return ctx
}

// Attribute keys [NewLogHandler] adds to records.
const (
	LogKeyRunID        = "workflow.run_id"
	LogKeyWorkflowName = "workflow.name"
	LogKeyStepID       = "workflow.step_id"
	LogKeyStepName     = "workflow.step_name"
	LogKeyAttempt      = "workflow.attempt"
)

// NewLogHandler wraps inner so logging from workflow code is replay-aware: a record
// logged with a workflow [Context] while the workflow replays history is dropped (it
// was logged when that code first ran live), and records logged with a workflow or
// step context get the run, workflow, step and attempt attributes, once: attributes
// already present under the same keys are not added again. Records logged with
// other contexts pass through unchanged. Log with the context-taking slog methods
// (InfoContext, ...) so the handler sees it.
func NewLogHandler(inner slog.Handler) slog.Handler { return &logHandler{inner: inner} }

type logHandler struct {
	inner slog.Handler
	// own lists attribute keys added with WithAttrs at the top level, which must not
	// be repeated.
	own map[string]bool
	// grouped: WithGroup was called; attributes added by WithAttrs since then are
	// inside the group and do not shadow the identity keys.
	grouped bool
}

func (h *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	if info, ok := InfoFrom(ctx); ok && info.Replaying {
		return false
	}
	return h.inner.Enabled(ctx, level)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	info, ok := InfoFrom(ctx)
	if !ok {
		return h.inner.Handle(ctx, r)
	}
	if info.Replaying {
		return nil
	}
	present := map[string]bool{}
	r.Attrs(func(a slog.Attr) bool { present[a.Key] = true; return true })
	add := func(key string, v slog.Value) {
		if !present[key] && !h.own[key] {
			r.AddAttrs(slog.Attr{Key: key, Value: v})
		}
	}
	add(LogKeyRunID, slog.StringValue(info.RunID))
	add(LogKeyWorkflowName, slog.StringValue(info.WorkflowName))
	if info.StepID != "" {
		add(LogKeyStepID, slog.StringValue(info.StepID))
		add(LogKeyStepName, slog.StringValue(info.StepName))
		add(LogKeyAttempt, slog.IntValue(info.Attempt))
	}
	return h.inner.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	own := map[string]bool{}
	for k := range h.own {
		own[k] = true
	}
	if !h.grouped {
		for _, a := range attrs {
			own[a.Key] = true
		}
	}
	return &logHandler{inner: h.inner.WithAttrs(attrs), own: own, grouped: h.grouped}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &logHandler{inner: h.inner.WithGroup(name), own: h.own, grouped: true}
}
