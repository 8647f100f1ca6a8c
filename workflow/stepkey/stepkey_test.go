package stepkey_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-go/cairn/workflow/stepkey"
)

func TestKey(t *testing.T) {
	t.Parallel()
	k1, err := stepkey.Key("wrun_1", "step_3")
	if err != nil {
		t.Fatal(err)
	}
	if k1 != "cairn-step-v1:6:wrun_1:6:step_3" {
		t.Errorf("key = %q", k1)
	}
	// Length prefixes keep ambiguous concatenations apart.
	a, _ := stepkey.Key("a:1", "b")
	b, _ := stepkey.Key("a", "1:b")
	if a == b {
		t.Errorf("%q == %q", a, b)
	}
	for _, tc := range [][2]string{{"", "s"}, {"r", ""}} {
		if _, err := stepkey.Key(tc[0], tc[1]); err == nil {
			t.Errorf("Key(%q, %q) accepted", tc[0], tc[1])
		}
	}
	if _, err := stepkey.FromContext(context.Background()); !errors.Is(err, stepkey.ErrNotInStep) {
		t.Errorf("outside a step: %v", err)
	}
	if _, err := stepkey.Payload(context.Background()); !errors.Is(err, stepkey.ErrNotInStep) {
		t.Errorf("outside a step: %v", err)
	}
}
