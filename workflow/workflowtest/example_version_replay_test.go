package workflowtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

// OrderFraudChecked is OrderV2's change made safely: the fraud check after the
// reservation sits behind workflow.Version, so runs that reached their hook
// under OrderV1 keep OrderV1's path (DefaultVersion) and runs that reach the
// check under this code take it (version 1).
type OrderFraudChecked struct{}

func (OrderFraudChecked) WorkflowName() string { return "order" }

func (OrderFraudChecked) Run(ctx workflow.Context, o Order) (Receipt, error) {
	res, err := workflow.Step(ctx, "reserve", reserve, o)
	if err != nil {
		return Receipt{}, err
	}
	v, err := workflow.Version(ctx, "fraud-check", workflow.DefaultVersion, 1)
	if err != nil {
		return Receipt{}, err
	}
	if v >= 1 {
		ok, err := workflow.Step(ctx, "fraud check", fraudCheck, o)
		if err != nil {
			return Receipt{}, err
		}
		if !ok {
			return Receipt{}, workflow.Fatal(errors.New("order flagged"))
		}
	}
	return approveAndCharge(ctx, o, res)
}

// OrderFraudCheckedOnly is OrderFraudChecked once the old branch is removed:
// minSupported raised to 1, for when no run without the check is in flight.
type OrderFraudCheckedOnly struct{}

func (OrderFraudCheckedOnly) WorkflowName() string { return "order" }

func (OrderFraudCheckedOnly) Run(ctx workflow.Context, o Order) (Receipt, error) {
	res, err := workflow.Step(ctx, "reserve", reserve, o)
	if err != nil {
		return Receipt{}, err
	}
	if _, err := workflow.Version(ctx, "fraud-check", 1, 1); err != nil {
		return Receipt{}, err
	}
	ok, err := workflow.Step(ctx, "fraud check", fraudCheck, o)
	if err != nil {
		return Receipt{}, err
	}
	if !ok {
		return Receipt{}, workflow.Fatal(errors.New("order flagged"))
	}
	return approveAndCharge(ctx, o, res)
}

// stdoutTB prints what Replay reports; in a test, pass the *testing.T.
type stdoutTB struct{}

func (stdoutTB) Helper()                           {}
func (stdoutTB) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (stdoutTB) Fatalf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// approvedOrder runs w for o to its end in env, approving it on the way, and
// returns the run's log as JSON, in the form Replay reads.
func approvedOrder(ctx context.Context, env *workflowtest.Env, w workflow.Workflow[Order, Receipt], o Order) (*workflowtest.Run[Receipt], []byte, error) {
	run, err := workflowtest.Start(ctx, env, w, o)
	if err != nil {
		return nil, nil, err
	}
	if _, err := run.Result(ctx); !errors.Is(err, workflowtest.ErrBlocked) {
		return nil, nil, fmt.Errorf("want the run waiting for its approval, got %v", err)
	}
	if err := env.ResumeHook(ctx, "approve-"+o.ID, Approval{OK: true, By: "dana"}); err != nil {
		return nil, nil, err
	}
	if _, err := run.Result(ctx); err != nil {
		return nil, nil, err
	}
	events, err := run.Events(ctx)
	if err != nil {
		return nil, nil, err
	}
	history, err := json.Marshal(events)
	return run, history, err
}

// A history recorded under OrderV1 replays against OrderFraudChecked, which
// adds its step behind workflow.Version, and not against OrderV2, which adds the
// same step without it. A new run of OrderFraudChecked takes the step and
// records version 1 of the change in a run attribute.
func ExampleReplay_withVersion() {
	ctx := context.Background()
	env := workflowtest.New()

	_, v1History, err := approvedOrder(ctx, env, OrderV1{}, Order{ID: "ord-3", Cents: 900})
	if err != nil {
		fmt.Println(err)
		return
	}
	workflowtest.Replay(stdoutTB{}, OrderFraudChecked{}, v1History) // clean: reports nothing
	workflowtest.Replay(stdoutTB{}, OrderV2{}, v1History)

	run, _, err := approvedOrder(ctx, env, OrderFraudChecked{}, Order{ID: "ord-4", Cents: 900})
	if err != nil {
		fmt.Println(err)
		return
	}
	ops, _ := run.Ops(ctx)
	for _, op := range ops {
		fmt.Println(strings.TrimSpace(op.ID + " " + op.Name))
	}
	r, _ := env.World().GetRun(ctx, run.ID())
	fmt.Println(workflow.AttrVersionPrefix+"fraud-check", "=", r.Attributes[workflow.AttrVersionPrefix+"fraud-check"])
	// Output:
	// workflowtest: replay: workflow: nondeterministic workflow code in run run-1 at operation 2: history has hook (hook_2.run-1), code asked for step "fraud check"
	// step_1 reserve
	// step_2 fraud check
	// hook_3.run-2
	// wait_4
	// step_5 charge
	// cairn.version.fraud-check = 1
}

// TestVersionedReplay replays histories recorded under OrderV1 (in testdata,
// and in an Env) and under OrderFraudChecked against each version of the code.
func TestVersionedReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	_, v1, err := approvedOrder(ctx, env, OrderV1{}, Order{ID: "ord-3", Cents: 900})
	if err != nil {
		t.Fatal(err)
	}
	_, v2, err := approvedOrder(ctx, env, OrderFraudChecked{}, Order{ID: "ord-4", Cents: 900})
	if err != nil {
		t.Fatal(err)
	}
	completed, waiting := readHistory(t, "order_completed.json"), readHistory(t, "order_waiting.json")

	tests := []struct {
		name      string
		w         workflow.Workflow[Order, Receipt]
		history   []byte
		wantError []string // substrings of the one t.Errorf message; nil: clean
	}{
		{name: "versioned code, v1 run recorded in an Env", w: OrderFraudChecked{}, history: v1},
		{name: "versioned code, v1 run completed", w: OrderFraudChecked{}, history: completed},
		{name: "versioned code, v1 run waiting for its hook", w: OrderFraudChecked{}, history: waiting},
		{name: "versioned code, its own run", w: OrderFraudChecked{}, history: v2},
		{name: "unversioned code, v1 run", w: OrderV2{}, history: v1,
			wantError: []string{"at operation 2", "history has hook (hook_2.run-1)", `code asked for step "fraud check"`}},
		{name: "unversioned code, v1 run waiting for its hook", w: OrderV2{}, history: waiting,
			wantError: []string{"at operation 2", "history has hook", `code asked for step "fraud check"`}},
		{name: "unversioned code, versioned run", w: OrderV2{}, history: v2},
		{name: "rollback to v1, versioned run", w: OrderV1{}, history: v2,
			wantError: []string{"at operation 2", `history has step "fraud check" (step_2)`, "code asked for hook"}},
		{name: "old branch removed, versioned run", w: OrderFraudCheckedOnly{}, history: v2},
		{name: "old branch removed, v1 run", w: OrderFraudCheckedOnly{}, history: v1,
			wantError: []string{`has version -1 of change "fraud-check", code supports 1 to 1`}},
		{name: "old branch removed, v1 run waiting for its hook", w: OrderFraudCheckedOnly{}, history: waiting,
			wantError: []string{`has version -1 of change "fraud-check", code supports 1 to 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := replayWith(func(tb workflowtest.TB) { workflowtest.Replay(tb, tt.w, tt.history) })
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
