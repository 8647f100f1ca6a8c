package workflow

import (
	"context"
	"time"
)

// Context is the context workflow code runs with. It carries the values of the
// delivery that runs the workflow but is never cancelled: a workflow suspends and
// resumes through the runtime, not through cancellation. Only the runtime creates
// one; workflow operations called with any other value fail with [ErrNotInWorkflow],
// and operations called from a goroutine other than the workflow's own fail
// with an error matching [ErrNotWorkflowGoroutine].
type Context interface {
	context.Context
	execution() *execution
}

// Info identifies the code a context belongs to. The runtime attaches it to the
// workflow [Context] and to every step attempt's context, as separate values a
// tracer, logger or metrics bridge reads with [InfoFrom].
type Info struct {
	RunID        string
	WorkflowName string
	// StepID and StepName are set for a step attempt ("step_3", "charge card").
	StepID   string
	StepName string
	// Attempt is the live attempt number of a step, starting at 1.
	Attempt int
	// Replaying is true while workflow code re-executes history it already ran in an
	// earlier delivery; it turns false once the code reaches the newest event of the
	// log. Step attempts are always live.
	Replaying bool
}

type infoKey struct{}

// infoSource lets the workflow context report a Replaying flag that changes as the
// execution advances.
type infoSource interface{ info() Info }

type staticInfo Info

func (s staticInfo) info() Info { return Info(s) }

// InfoFrom returns the workflow identity carried by ctx: a workflow [Context], a
// step attempt's context, or any context derived from them.
func InfoFrom(ctx context.Context) (Info, bool) {
	if ctx == nil {
		return Info{}, false
	}
	src, ok := ctx.Value(infoKey{}).(infoSource)
	if !ok {
		return Info{}, false
	}
	return src.info(), true
}

func withInfo(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, infoKey{}, staticInfo(info))
}

// wfContext is the Context implementation: the values of the delivery running the
// workflow, without its cancellation, plus the execution. A cached execution
// resumed by a later delivery sees that delivery's values.
type wfContext struct {
	exec *execution
	// detached: made by WithoutCancel, so the run's cancellation does not
	// interrupt operations called with it.
	detached bool
}

// WithoutCancel returns a copy of ctx whose operations the run's cancellation
// does not interrupt, for the cleanup a cancelled run does before it ends
// (compensating steps, a last notification):
//
//	if _, err := workflow.Step(ctx, "charge", charge, order); errors.Is(err, workflow.ErrCancelled) {
//		_, _ = workflow.Step(workflow.WithoutCancel(ctx), "refund", refund, order)
//		return err
//	}
//
// A ctx that is not a workflow Context is returned as is.
func WithoutCancel(ctx Context) Context {
	c, ok := ctx.(*wfContext)
	if !ok {
		return ctx
	}
	return &wfContext{exec: c.exec, detached: true}
}

func detached(ctx Context) bool {
	c, ok := ctx.(*wfContext)
	return ok && c.detached
}

func (c *wfContext) execution() *execution { return c.exec }

func (c *wfContext) Value(key any) any {
	if key == (infoKey{}) {
		return c.exec
	}
	return c.exec.deliveryCtx().Value(key)
}

func (c *wfContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *wfContext) Done() <-chan struct{}       { return nil }
func (c *wfContext) Err() error                  { return nil }

func execOf(ctx Context) (*execution, error) {
	if ctx == nil {
		return nil, ErrNotInWorkflow
	}
	e := ctx.execution()
	if e == nil {
		return nil, ErrNotInWorkflow
	}
	// Before the closed check: goroutine IDs are never reused, so a call from a
	// goroutine the workflow started is named as such even after the run moved on.
	if err := e.ownerCheck(); err != nil {
		return nil, err
	}
	if e.closed.Load() {
		return nil, ErrNotInWorkflow
	}
	return e, nil
}
