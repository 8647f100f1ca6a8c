package workflow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// BadContinue is an int workflow that tries to continue as new with an input
// given by its own input: 0 a string, 1 a struct, 2 an untyped constant (an
// int, which fits its int64 input), 3 ContinueAs of itself, 4 ContinueAs of
// another workflow with the same input type.
type BadContinue struct{}

type notAnInt struct{ N int }

func (BadContinue) Run(ctx workflow.Context, in int64) (string, error) {
	if in >= 100 {
		return "continued", nil
	}
	var err error
	switch in {
	case 0:
		err = workflow.ContinueAsNew(ctx, "one")
	case 1:
		err = workflow.ContinueAsNew(ctx, notAnInt{N: 1})
	case 2:
		err = workflow.ContinueAsNew(ctx, 100)
	case 3:
		err = workflow.ContinueAs[BadContinue](ctx, 100)
	case 4:
		err = workflow.ContinueAs[OtherInt64](ctx, 100)
	}
	var ie *workflow.ContinueAsNewInputError
	if errors.As(err, &ie) && errors.Is(err, workflow.ErrInputType) {
		return "refused: " + ie.Got, nil
	}
	return "", err
}

// OtherInt64 is another workflow with BadContinue's input type.
type OtherInt64 struct{}

func (OtherInt64) Run(workflow.Context, int64) (int, error) { return 0, nil }

func TestContinueAsNewChecksInputType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        int64
		want      string
		continued bool
	}{
		{"string into int64", 0, "refused: string", false},
		{"struct into int64", 1, "refused: workflow_test.notAnInt", false},
		{"untyped constant fits", 2, "continued", true},
		{"ContinueAs itself", 3, "continued", true},
		{"ContinueAs another workflow", 4, "refused: workflow_test.OtherInt64", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := serve(t, testWorlds[1].open(t), workflow.Config{}, workflow.Use(BadContinue{}))
			run, err := workflow.Start(context.Background(), h.c, BadContinue{}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(resultCtx(t))
			if err != nil || got != tc.want {
				t.Fatalf("Result = %q, %v; want %q", got, err, tc.want)
			}
			first, err := h.w.GetRun(context.Background(), run.ID())
			if err != nil {
				t.Fatal(err)
			}
			if cont := first.Attributes[workflow.AttrContinuedAs] != ""; cont != tc.continued {
				t.Fatalf("continued = %v, want %v (attributes %v)", cont, tc.continued, first.Attributes)
			}
			if !tc.continued {
				// Nothing was recorded for the refused continuation: no next run.
				if _, err := h.w.GetRun(context.Background(), run.ID()+"-cont-1"); !errors.Is(err, worlds.ErrRunNotFound) {
					t.Fatalf("next run: %v, want none", err)
				}
			}
		})
	}
}
