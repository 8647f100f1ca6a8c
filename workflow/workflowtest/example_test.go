package workflowtest_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

// Signup waits for the user to confirm their address, then reminds them when
// their 30-day trial ends.
type Signup struct{}

func (Signup) Run(ctx workflow.Context, email string) (string, error) {
	hook, err := workflow.CreateHook[bool](ctx, workflow.HookOptions{Token: "confirm-" + email})
	if err != nil {
		return "", err
	}
	if ok, err := hook.Receive(ctx); err != nil || !ok {
		return "unconfirmed", err
	}
	if err := workflow.Sleep(ctx, 30*24*time.Hour); err != nil {
		return "", err
	}
	return workflow.Step(ctx, "send reminder", func(context.Context, string) (string, error) {
		return "", fmt.Errorf("would send a real email")
	}, email)
}

// A test of Signup: the email step is stubbed, the hook resumed by its token,
// and the 30-day sleep passes at once on the virtual clock.
func Example() {
	ctx := context.Background()
	env := workflowtest.New()
	workflowtest.Stub(env, "send reminder", func(_ context.Context, email string) (string, error) {
		return "reminded " + email, nil
	})
	run, err := workflowtest.Start(ctx, env, Signup{}, "ada@example.com")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := run.Result(ctx); err != nil {
		fmt.Println(err) // blocked: the run waits for its confirmation
	}
	if err := env.ResumeHook(ctx, "confirm-ada@example.com", true); err != nil {
		fmt.Println(err)
		return
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	fmt.Println("virtual time passed:", env.Now().Sub(env.StartTime()))
	for _, c := range env.Calls("send reminder") {
		fmt.Printf("send reminder, attempt %d: %s -> %s\n", c.Attempt, c.Input, c.Output)
	}
	ops, _ := run.Ops(ctx)
	for _, op := range ops {
		fmt.Println(op.Position, op.Kind, op.Name, op.Done)
	}
	// Output:
	// workflowtest: run is blocked with nothing due: run run-1 is running; active hook tokens: ["confirm-ada@example.com"]
	// reminded ada@example.com <nil>
	// virtual time passed: 720h0m0s
	// send reminder, attempt 1: "ada@example.com" -> "reminded ada@example.com"
	// 1 hook  false
	// 2 wait  true
	// 3 step send reminder true
}

// printTB prints what Replay reports; in a test, pass the *testing.T.
type printTB struct{}

func (printTB) Helper()                           {}
func (printTB) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (printTB) Fatalf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// Checking a change against a history recorded in production, printed with
// `cairn inspect events <run ID> --json --all`: OrderV2 inserted a step where the
// run recorded under OrderV1 has its hook, so that run would fail after the deploy.
func ExampleReplay() {
	history, err := os.ReadFile("testdata/order_completed.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	workflowtest.Replay(printTB{}, OrderV1{}, history) // clean: reports nothing
	workflowtest.Replay(printTB{}, OrderV2{}, history)
	// Output:
	// workflowtest: replay: workflow: nondeterministic workflow code in run wrun_order_completed at operation 2: history has hook (hook_2.wrun_order_completed), code asked for step "fraud check"
}
