// Package flows holds the workflows the deploy/aws worker runs. Approval is the
// walk-through's example: it waits for a decision sent to its hook's webhook URL
// and records it. Register your own workflows in the worker's main next to it.
package flows

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/workflow"
)

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
