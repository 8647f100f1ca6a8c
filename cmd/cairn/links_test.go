package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// seedLinks writes a parent run that started a child, the child, and the child's
// continuation, linked as workflow.StartChild and workflow.ContinueAsNew link them.
func seedLinks(t *testing.T) (db, child, next string) {
	t.Helper()
	db = filepath.Join(t.TempDir(), "cairn.db")
	w, err := local.Open(context.Background(), local.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	child, next = workflow.ChildRunID("parent", "step_1"), workflow.ChildRunID("parent", "step_1")+"-cont-1"
	appendAll(t, w, "parent",
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "orders.Batch", Input: json.RawMessage(`{}`)},
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "step_1", StepName: "cairn.child:orders.Fulfil", Input: json.RawMessage(`{}`)},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "step_1", Attempt: 1},
	)
	link := map[string]string{workflow.AttrParent: "parent", workflow.AttrParentStep: "step_1", workflow.AttrParentWorkflow: "orders.Batch"}
	appendAll(t, w, child,
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "orders.Fulfil", Input: json.RawMessage(`1`), Attributes: link},
		worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{workflow.AttrContinuedAs: next}},
		worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`{"continuedAs":"` + next + `"}`)},
	)
	appendAll(t, w, next, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "orders.Fulfil", Input: json.RawMessage(`2`),
		Attributes: map[string]string{workflow.AttrParent: "parent", workflow.AttrContinuedFrom: child}})
	return db, child, next
}

func TestInspectRunLinks(t *testing.T) {
	t.Parallel()
	db, child, next := seedLinks(t)
	for _, tc := range []struct {
		run  string
		want []string
	}{
		{"parent", []string{"Child:", child + " (orders.Fulfil, step_1, running)"}},
		{child, []string{"Parent:", "parent", "Continued as:", next}},
		{next, []string{"Continued from:", child}},
	} {
		code, out, errOut := runCLI(t, "inspect", "--db", db, "run", tc.run)
		if code != 0 {
			t.Fatalf("inspect run %s: exit %d, %s", tc.run, code, errOut)
		}
		for _, s := range tc.want {
			if !strings.Contains(out, s) {
				t.Errorf("inspect run %s lacks %q:\n%s", tc.run, s, out)
			}
		}
	}
}
