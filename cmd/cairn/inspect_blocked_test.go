package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// A run blocked on its workflow code's error shows as blocked in the listing,
// and inspect run prints the error and its stack.
func TestInspectBlockedRun(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cairn.db")
	w, err := local.Open(context.Background(), local.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, "run-stuck",
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "orders.Fulfil", Input: json.RawMessage(`{"id":"o3"}`)},
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventRunBlocked, Error: &worlds.ErrorInfo{
			Message: "workflow: panic: assignment to entry in nil map", Type: "panic", Fatal: true,
			Stack: "goroutine 9 [running]:\norders.(*Fulfil).Run(...)\n\t/src/orders/fulfil.go:42"}},
	)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"runs"}, []string{"run-stuck", "running (blocked)", "assignment to entry in nil map"}},
		{[]string{"run", "run-stuck"}, []string{"Status:", "running", "Blocked:", "workflow code failed", "Blocked on:",
			"assignment to entry in nil map", "Blocked stack:", "  orders.(*Fulfil).Run(...)", "fulfil.go:42"}},
	} {
		code, out, errOut := runCLI(t, append([]string{"inspect", "--db", path}, tc.args...)...)
		if code != 0 {
			t.Fatalf("inspect %v: exit %d, stderr %q", tc.args, code, errOut)
		}
		for _, s := range tc.want {
			if !strings.Contains(out, s) {
				t.Errorf("inspect %v: stdout lacks %q:\n%s", tc.args, s, out)
			}
		}
	}
}
