package worldhttp_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// runs.reset makes the new run from the events up to "to" (a seq or
// "last-step"), and refuses a bad point with 400 and a message naming it.
func TestRPCReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	evs := []worlds.Event{
		{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: json.RawMessage(`1`)},
		{Type: worlds.EventRunStarted},
		{Type: worlds.EventStepCreated, CorrelationID: "step_1", StepName: "a"},
		{Type: worlds.EventStepStarted, CorrelationID: "step_1", Attempt: 1},
		{Type: worlds.EventStepCompleted, CorrelationID: "step_1", Output: json.RawMessage(`2`)},
		{Type: worlds.EventStepCreated, CorrelationID: "step_2", StepName: "b"},
		{Type: worlds.EventStepStarted, CorrelationID: "step_2", Attempt: 1},
		{Type: worlds.EventStepFailed, CorrelationID: "step_2", Error: &worlds.ErrorInfo{Message: "bad deploy", Fatal: true}},
		{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{Message: "bad deploy"}},
	}
	if _, err := w.Append(ctx, "r1", evs...); err != nil {
		t.Fatal(err)
	}
	h := worldhttp.Handler(w, worldhttp.Options{NewRunID: func() string { return "r2" }})
	cases := []struct {
		name, params string
		status       int
		msg          string // in the error message
	}{
		{"no to", `{"runId":"r1"}`, 400, "params.to"},
		{"not a point", `{"runId":"r1","to":"first"}`, 400, `"first"`},
		{"out of range", `{"runId":"r1","to":"10"}`, 400, "event 10: out of range"},
		{"inside a step", `{"runId":"r1","to":"7"}`, 400, `event 7: not a workflow-task boundary: step "b"`},
		{"unknown run", `{"runId":"nope","to":"last-step"}`, 404, ""},
		{"last step", `{"runId":"r1","to":"last-step"}`, 200, ""},
		{"at a seq, new run ID given", `{"runId":"r1","to":"2","newRunId":"r3","reason":"fixed"}`, 200, ""},
	}
	for _, tc := range cases {
		status, out := post(t, h, "/v1/workflow/rpc", `{"method":"runs.reset","params":`+tc.params+`}`)
		if status != tc.status {
			t.Fatalf("%s: status %d, want %d (%v)", tc.name, status, tc.status, out)
		}
		if tc.msg != "" {
			e, _ := out["error"].(map[string]any)
			if msg, _ := e["message"].(string); !strings.Contains(msg, tc.msg) {
				t.Fatalf("%s: error %v, want it to contain %q", tc.name, out, tc.msg)
			}
		}
	}
	for id, want := range map[string]int64{"r2": 5, "r3": 2} {
		run, err := w.GetRun(ctx, id)
		if err != nil || run.Attributes[worlds.AttrResetFrom] != "r1" || run.Attributes[worlds.AttrResetSeq] != strconv.FormatInt(want, 10) {
			t.Fatalf("run %s: %+v, %v; want it reset from r1 at %d", id, run, err, want)
		}
		if run.EventCount != want+1 {
			t.Fatalf("run %s has %d events, want the %d copied and the copy's marker", id, run.EventCount, want)
		}
	}
}
