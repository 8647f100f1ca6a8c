package workflowui_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// The run view links a parent to its children and a child to its parent, as
// workflow.StartChild records them.
func TestRunViewLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	must := func(runID string, evs ...worlds.Event) {
		if _, err := e.world.Append(ctx, runID, evs...); err != nil {
			t.Fatal(err)
		}
	}
	child := workflow.ChildRunID("parent", "step_1")
	must("parent",
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "devui.Batch", Input: json.RawMessage(`{}`)},
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "step_1", StepName: "cairn.child:devui.Item", Input: json.RawMessage(`{}`)},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "step_1", Attempt: 1})
	must(child, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "devui.Item", Input: json.RawMessage(`1`),
		Attributes: map[string]string{workflow.AttrParent: "parent", workflow.AttrParentStep: "step_1"}})

	var v struct{ Links workflow.RunLinks }
	e.call(t, "GET", "/api/runs/parent", "", 200, &v)
	if len(v.Links.Children) != 1 || v.Links.Children[0].RunID != child || v.Links.Children[0].Workflow != "devui.Item" ||
		v.Links.Children[0].Status != worlds.StepRunning {
		t.Fatalf("parent links = %+v", v.Links)
	}
	v.Links = workflow.RunLinks{}
	e.call(t, "GET", "/api/runs/"+child, "", 200, &v)
	if v.Links.Parent != "parent" || len(v.Links.Children) != 0 {
		t.Fatalf("child links = %+v", v.Links)
	}
}
