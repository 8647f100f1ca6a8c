package workflowtest

import (
	"context"
	"reflect"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// ChildStubStep prefixes the name of the step a child stub runs in
// ("workflowtest.child:<workflow name>"): [Env.Calls] with that name lists the
// stubbed child runs, with their inputs and outputs.
const ChildStubStep = "workflowtest.child:"

// StubChild replaces workflow w, in every run of the Env, by fn: a child run of
// w started with [workflow.StartChild] (or any run of w) runs fn once, as a step
// named [ChildStubStep] plus w's workflow name, and ends with its output, or
// fails with its error (without retries), so the parent's ChildRun resolves as
// it would with the real child. It replaces w's registration: a later
// [Register] of w, or [Start] of it, undoes the stub.
func StubChild[I, O any](e *Env, w workflow.Workflow[I, O], fn func(ctx context.Context, in I) (O, error)) {
	Register[I, O](e, childStub[I, O]{name: nameOf(w), fn: fn})
}

// nameOf is the name runs of w are recorded under.
func nameOf(w any) string {
	if n, ok := w.(worlds.Namer); ok {
		return n.WorkflowName()
	}
	return worlds.TypeWorkflowName(reflect.TypeOf(w))
}

// childStub is the workflow StubChild registers in place of the real one.
type childStub[I, O any] struct {
	name string
	fn   func(context.Context, I) (O, error)
}

// WorkflowName records the stub's runs under the stubbed workflow's name.
func (s childStub[I, O]) WorkflowName() string { return s.name }

// Run runs the stub function once, as a step, so replays read its result.
func (s childStub[I, O]) Run(ctx workflow.Context, in I) (O, error) {
	return workflow.Step(ctx, ChildStubStep+s.name, s.fn, in, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 1}))
}
