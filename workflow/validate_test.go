package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// shipment declares its own rule: an ID is required.
type shipment struct {
	ID    string   `json:"id"`
	Boxes int      `json:"boxes"`
	Tags  []string `json:"tags"`
}

func (s shipment) Validate() error {
	if s.ID == "" {
		return &worlds.InputError{Field: "id", Reason: "required"}
	}
	return nil
}

type Ship struct{}

func (Ship) Run(_ workflow.Context, s shipment) (string, error) { return s.ID, nil }

func TestStartValidates(t *testing.T) {
	t.Parallel()
	w := memworld.New()
	c, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	many := map[string]string{}
	for i := range worlds.MaxAttributes + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for _, tc := range []struct {
		name  string
		in    shipment
		opts  []workflow.StartOption
		field string
	}{
		{"Validate rejects", shipment{}, nil, `field "id"`},
		{"run ID with NUL", shipment{ID: "s"}, []workflow.StartOption{workflow.WithRunID("a\x00b")}, "runId"},
		{"long run ID", shipment{ID: "s"}, []workflow.StartOption{workflow.WithRunID(strings.Repeat("r", 5000))}, "runId"},
		{"too many attributes", shipment{ID: "s"}, []workflow.StartOption{workflow.WithAttributes(many)}, "attributes"},
	} {
		_, err := workflow.Start(ctx, c, Ship{}, tc.in, tc.opts...)
		if !errors.Is(err, worlds.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: err %v, want an invalid argument naming %s", tc.name, err, tc.field)
		}
	}
	if p, err := w.ListRuns(ctx, worlds.RunFilter{}); err != nil || len(p.Items) != 0 {
		t.Fatalf("rejected starts created %d runs (%v)", len(p.Items), err)
	}
	if _, err := workflow.Start(ctx, c, Ship{}, shipment{ID: "s1"}, workflow.WithRunID("ship:s1")); err != nil {
		t.Fatalf("valid start: %v", err)
	}
	err = c.Cancel(ctx, "ship:s1", strings.Repeat("x", worlds.MaxAttributeValueLength+1))
	if !errors.Is(err, worlds.ErrInvalidArgument) || !strings.Contains(err.Error(), "reason") {
		t.Fatalf("cancel with an oversized reason: %v", err)
	}
	if run, err := w.GetRun(ctx, "ship:s1"); err != nil || run.Status.Terminal() {
		t.Fatalf("rejected cancel changed the run: %s %v", run.Status, err)
	}
}

// The runner of workflow.Use checks inputs given by name against the input type.
func TestRunnerValidatesInput(t *testing.T) {
	t.Parallel()
	v, ok := workflow.Use(Ship{}).(worlds.InputValidator)
	if !ok {
		t.Fatal("workflow.Use's runner does not implement worlds.InputValidator")
	}
	name := worlds.WorkflowName[Ship]()
	for _, tc := range []struct {
		input, field string
	}{
		{`{"id":"s1","boxes":2,"tags":["a"]}`, ""},
		{`{"id":"s1","boxes":"two"}`, "boxes"},
		{`{"id":"s1","tags":[1]}`, "tags"},
		{`{"id":"s1","colour":"red"}`, "colour"},
		{`{"id":""}`, "id"},
		{`[1]`, ""},
	} {
		err := v.ValidateInput(name, json.RawMessage(tc.input))
		if tc.input == `{"id":"s1","boxes":2,"tags":["a"]}` {
			if err != nil {
				t.Errorf("%s: %v", tc.input, err)
			}
			continue
		}
		var ie *worlds.InputError
		if !errors.As(err, &ie) || !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("%s: err %v, want an *InputError", tc.input, err)
			continue
		}
		if !strings.HasPrefix(ie.Field, tc.field) || ie.Workflow != name {
			t.Errorf("%s: field %q workflow %q, want field %q of %s", tc.input, ie.Field, ie.Workflow, tc.field, name)
		}
	}
	if err := v.ValidateInput("other.Workflow", json.RawMessage(`{}`)); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("another workflow's name: %v", err)
	}
}
