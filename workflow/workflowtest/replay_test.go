package workflowtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

// fakeTB records what Replay reports; Fatalf ends the calling goroutine like
// testing.T's does.
type fakeTB struct {
	mu     sync.Mutex
	errors []string
	fatals []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}

// replayWith runs replay on its own goroutine, so a Fatalf ends only that one.
func replayWith(replay func(workflowtest.TB)) *fakeTB {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		replay(tb)
	}()
	<-done
	return tb
}

func readHistory(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The histories in testdata were printed by `cairn inspect events <run ID> --json
// --all` for runs of OrderV1 on the embedded World (see TestRecordHistories): one
// completed, one waiting for its approval.
func TestReplay(t *testing.T) {
	t.Parallel()
	v1 := func(h []byte) func(workflowtest.TB) {
		return func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderV1{}, h) }
	}
	v2 := func(h []byte) func(workflowtest.TB) {
		return func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderV2{}, h) }
	}
	v3 := func(h []byte) func(workflowtest.TB) {
		return func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderV3{}, h) }
	}
	completed, waiting := readHistory(t, "order_completed.json"), readHistory(t, "order_waiting.json")
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(completed, &page); err != nil {
		t.Fatal(err)
	}
	array, _ := json.Marshal(page.Items)
	truncated, _ := json.Marshal(page.Items[:8]) // cut after the wait was created
	reordered := strings.Replace(string(array), `"stepName":"reserve"`, `"stepName":"reserve stock"`, 1)

	tests := []struct {
		name      string
		replay    func(workflowtest.TB)
		wantError []string // substrings of the one t.Errorf message; nil: clean
		wantFatal string
	}{
		{name: "v1 against its completed run", replay: v1(completed)},
		{name: "v1 against its waiting run", replay: v1(waiting)},
		{name: "v1 against an array of events", replay: v1(array)},
		{name: "v1 against a run cut mid-sleep", replay: v1(truncated)},
		{name: "v2 inserts a step before the completed run's hook", replay: v2(completed),
			wantError: []string{"nondeterministic", "run wrun_order_completed at operation 2", `history has hook (hook_2.wrun_order_completed)`, `code asked for step "fraud check"`}},
		{name: "v2 inserts a step before the waiting run's hook", replay: v2(waiting),
			wantError: []string{"at operation 2", "history has hook", `code asked for step "fraud check"`}},
		{name: "v3 appends a step after the completed run's end", replay: v3(completed),
			wantError: []string{"at operation 5", "history has the run's end (completed)", `code asked for step "email receipt"`}},
		{name: "v3 appends a step the waiting run has not reached", replay: v3(waiting)},
		{name: "a step renamed in the history", replay: v1([]byte(reordered)),
			wantError: []string{"at operation 1", `history has step "reserve stock" (step_1)`, `code asked for step "reserve"`}},
		{name: "code waits where the completed run ended", replay: func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderTwoApprovals{}, completed) },
			wantError: []string{"history has the run's end (completed), code waits for an operation the history left unresolved"}},
		{name: "code fails where the run completed", replay: func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderRefuses{}, completed) },
			wantError: []string{"history ends completed, code ended failed: refused after all"}},
		{name: "code panics", replay: func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderPanics{}, waiting) },
			wantError: []string{"workflow code panicked", "no approvals today"}},
		{name: "an event that does not apply", replay: v1([]byte(strings.Replace(string(array), `"correlationId":"step_1","createdAt"`, `"correlationId":"step_9","createdAt"`, 2))),
			wantFatal: "event 5 (step_completed step_1) does not apply to the events before it"},
		{name: "not JSON", replay: v1([]byte("nope")), wantFatal: "neither an events page nor an array"},
		{name: "no events", replay: v1([]byte(`{"items":[]}`)), wantFatal: "no events"},
		{name: "one page of many", replay: v1([]byte(`{"items":[],"cursor":"abc"}`)), wantFatal: "--all"},
		{name: "not from the start", replay: v1(mustJSON(t, page.Items[1:])), wantFatal: "not a whole log"},
		{name: "another workflow's run", replay: func(tb workflowtest.TB) { workflowtest.Replay(tb, Trial{}, completed) },
			wantFatal: `run of workflow "order", not "trial"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := replayWith(tt.replay)
			if tt.wantFatal != "" {
				if len(tb.fatals) != 1 || !strings.Contains(tb.fatals[0], tt.wantFatal) {
					t.Fatalf("fatals %q, want one containing %q (errors %q)", tb.fatals, tt.wantFatal, tb.errors)
				}
				return
			}
			if len(tb.fatals) > 0 {
				t.Fatalf("fatal: %q", tb.fatals)
			}
			if tt.wantError == nil {
				if len(tb.errors) > 0 {
					t.Fatalf("replay reported %q, want a clean replay", tb.errors)
				}
				return
			}
			if len(tb.errors) != 1 {
				t.Fatalf("errors %q, want exactly one", tb.errors)
			}
			for _, want := range tt.wantError {
				if !strings.Contains(tb.errors[0], want) {
					t.Errorf("error %q lacks %q", tb.errors[0], want)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplayRunsNoStep checks that replay takes step results from the history:
// a step the history completed is not called again, and a step the code reaches
// beyond the history (the charge, once the history is cut after the sleep) is
// not called at all.
func TestReplayRunsNoStep(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	wf := countingOrder{calls: &calls}
	completed := readHistory(t, "order_completed.json")
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(completed, &page); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string][]byte{
		"completed": completed, "waiting": readHistory(t, "order_waiting.json"),
		"cut after the sleep": mustJSON(t, page.Items[:9]),
	} {
		tb := replayWith(func(tb workflowtest.TB) { workflowtest.Replay(tb, wf, h) })
		if len(tb.errors)+len(tb.fatals) > 0 {
			t.Fatalf("%s: %q %q", name, tb.errors, tb.fatals)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("replay ran steps %d times, want 0", n)
	}
}

// countingOrder is OrderV1 with step functions that count their calls.
type countingOrder struct{ calls *atomic.Int32 }

func (countingOrder) WorkflowName() string { return "order" }

func (w countingOrder) Run(ctx workflow.Context, o Order) (Receipt, error) {
	res, err := workflow.Step(ctx, "reserve", func(ctx context.Context, o Order) (string, error) {
		w.calls.Add(1)
		return reserve(ctx, o)
	}, o)
	if err != nil {
		return Receipt{}, err
	}
	hook, err := workflow.CreateHook[Approval](ctx, workflow.HookOptions{Token: "approve-" + o.ID})
	if err != nil {
		return Receipt{}, err
	}
	a, err := hook.Receive(ctx)
	if err != nil {
		return Receipt{}, err
	}
	if err := workflow.Sleep(ctx, coolingOff); err != nil {
		return Receipt{}, err
	}
	ch, err := workflow.Step(ctx, "charge", func(ctx context.Context, o Order) (string, error) {
		w.calls.Add(1)
		return charge(ctx, o)
	}, o)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Status: "charged", Reserved: res, Charge: ch, ApprovedBy: a.By, At: workflow.Now(ctx)}, nil
}
