// Package flows holds the workflows the deploy/aws worker runs, and Runners, the
// one registry of them: the worker runs it, and the api function refuses to
// start any workflow not in it. Approval is the walk-through's example: it
// waits for a decision sent to its hook's webhook URL and records it. Add your
// own workflows to Runners.
package flows

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// Runners is the deployment's registry of workflows. The worker executes their
// deliveries; the api function accepts runs.start only for their names (and
// checks inputs against their types), so a misspelt name is refused at once
// instead of leaving a run pending while every delivery of it fails. Both
// functions are built from this package, so they always agree.
func Runners() *worlds.RunnerSet {
	return worlds.Runners(workflow.Use(Approval{}))
}

// Request is Approval's input.
type Request struct {
	Subject string `json:"subject"`
}

// Decision is what an approver sends to the hook.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// Approval waits for a Decision on a hook with a random token and returns a
// summary of it.
type Approval struct{}

// WorkflowName is the name runs are started under (cairn runs start deploy.Approval).
func (Approval) WorkflowName() string { return "deploy.Approval" }

// Run implements workflow.Workflow.
func (Approval) Run(ctx workflow.Context, req Request) (string, error) {
	hook, err := workflow.CreateHook[Decision](ctx, workflow.HookOptions{
		Metadata: map[string]string{"purpose": "approve " + req.Subject},
	})
	if err != nil {
		return "", err
	}
	d, err := hook.Receive(ctx)
	if err != nil {
		return "", err
	}
	return workflow.Step(ctx, "record decision", func(_ context.Context, d Decision) (string, error) {
		verdict := "rejected"
		if d.Approved {
			verdict = "approved"
		}
		return fmt.Sprintf("%s %s by %s", req.Subject, verdict, d.By), nil
	}, d)
}
