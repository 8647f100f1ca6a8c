package worlds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

type namedRunner []string

func (n namedRunner) Workflows() []string { return n }
func (namedRunner) Run(context.Context, worlds.World, worlds.Delivery) error {
	return nil
}

// A start of a workflow no runner is registered for is refused before anything
// is written, with a typed error naming the known workflows.
func TestValidateStartUnknownWorkflow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		runners worlds.Runner
		known   []string
	}{
		{"runner set", worlds.Runners(namedRunner{"b.Flow"}, namedRunner{"a.Flow"}), []string{"a.Flow", "b.Flow"}},
		{"single runner", namedRunner{"z.Flow", "a.Flow"}, []string{"a.Flow", "z.Flow"}},
		{"empty set", worlds.Runners(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := worlds.ValidateStart(tc.runners, "typo.Flow", "", nil, nil)
			var uwe *worlds.UnknownWorkflowError
			if !errors.As(err, &uwe) || uwe.Name != "typo.Flow" || strings.Join(uwe.Known, ",") != strings.Join(tc.known, ",") {
				t.Fatalf("ValidateStart = %#v, want an *UnknownWorkflowError listing %q", err, tc.known)
			}
			if !errors.Is(err, worlds.ErrInvalidArgument) || !errors.Is(err, worlds.ErrNoRunner) {
				t.Errorf("%v must match ErrInvalidArgument and ErrNoRunner", err)
			}
			for _, k := range tc.known {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("%q does not name %s", err, k)
				}
			}
			if len(tc.known) > 0 {
				if err := worlds.ValidateStart(tc.runners, tc.known[0], "", nil, nil); err != nil {
					t.Errorf("known workflow %s: %v", tc.known[0], err)
				}
			}
		})
	}
	if err := worlds.ValidateStart(nil, "any.Flow", "", nil, nil); err != nil {
		t.Errorf("without runners any name is accepted: %v", err)
	}
}
