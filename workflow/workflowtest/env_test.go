package workflowtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Trial sends a reminder after a 30-day trial and reports when it did.
type Trial struct{}

func (Trial) WorkflowName() string { return "trial" }

func (Trial) Run(ctx workflow.Context, user string) (time.Time, error) {
	start := workflow.Now(ctx)
	if err := workflow.Sleep(ctx, 30*24*time.Hour); err != nil {
		return time.Time{}, err
	}
	if _, err := workflow.Step(ctx, "send reminder", sendReminder, user); err != nil {
		return time.Time{}, err
	}
	return start.Add(workflow.Now(ctx).Sub(start)), nil
}

func sendReminder(context.Context, string) (string, error) {
	return "", errors.New("sendReminder must be stubbed in tests")
}

func TestVirtualTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	workflowtest.Stub(env, "send reminder", func(_ context.Context, user string) (string, error) { return "sent to " + user, nil })
	run, err := workflowtest.Start(ctx, env, Trial{}, "ada")
	if err != nil {
		t.Fatal(err)
	}
	at, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := env.StartTime().Add(30 * 24 * time.Hour)
	if !at.Equal(want) {
		t.Fatalf("workflow.Now after the sleep = %s, want %s", at, want)
	}
	if got := env.Now(); got.Before(want) {
		t.Fatalf("env.Now() = %s, want at least %s", got, want)
	}
	ops, err := run.Ops(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Kind != workflowtest.OpSleep || !ops[0].ResumeAt.Equal(want) || !ops[0].Done ||
		ops[1].Kind != workflowtest.OpStep || ops[1].Name != "send reminder" || string(ops[1].Output) != `"sent to ada"` {
		t.Fatalf("ops = %+v", ops)
	}
}

// flaky fails its first n attempts.
func flaky(n int) func(context.Context, string) (string, error) {
	calls := 0
	return func(_ context.Context, in string) (string, error) {
		calls++
		if calls <= n {
			return "", errors.New("try again")
		}
		return "ok " + in, nil
	}
}

// Steps is a workflow of two steps.
type Steps struct{}

func (Steps) Run(ctx workflow.Context, in string) (string, error) {
	a, err := workflow.Step(ctx, "a", func(context.Context, string) (string, error) { return "real a", nil }, in)
	if err != nil {
		return "", err
	}
	return workflow.Step(ctx, "b", func(_ context.Context, s string) (string, error) { return s + "+real b", nil }, a,
		workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Hour, NoJitter: true}))
}

func TestStubsAndSpies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		opts         []workflowtest.Option
		stub         func(*workflowtest.Env)
		want         string
		wantErr      bool
		wantAttempts int // of step b
		wantStubbed  bool
	}{
		{name: "real steps", want: "real a+real b", wantAttempts: 1},
		{name: "real steps, queued", opts: []workflowtest.Option{workflowtest.WithQueueSteps()}, want: "real a+real b", wantAttempts: 1},
		{name: "stubbed b", stub: func(e *workflowtest.Env) {
			workflowtest.Stub(e, "b", func(_ context.Context, s string) (string, error) { return s + "+stub b", nil })
		}, want: "real a+stub b", wantAttempts: 1, wantStubbed: true},
		{name: "b retried an hour apart in virtual time", stub: func(e *workflowtest.Env) {
			workflowtest.Stub(e, "b", flaky(2))
		}, want: "ok real a", wantAttempts: 3, wantStubbed: true},
		{name: "b fails for good", stub: func(e *workflowtest.Env) {
			workflowtest.Stub(e, "b", flaky(3))
		}, wantErr: true, wantAttempts: 3, wantStubbed: true},
		{name: "b fatal", stub: func(e *workflowtest.Env) {
			workflowtest.Stub(e, "b", func(context.Context, string) (string, error) { return "", workflow.Fatal(errors.New("no")) })
		}, wantErr: true, wantAttempts: 1, wantStubbed: true},
		{name: "stub with the wrong input type", stub: func(e *workflowtest.Env) {
			workflowtest.Stub(e, "b", func(context.Context, int) (string, error) { return "", nil })
		}, wantErr: true, wantAttempts: 1, wantStubbed: true},
		{name: "stub panics", stub: func(e *workflowtest.Env) {
			workflowtest.Stub(e, "b", func(context.Context, string) (string, error) { panic("boom") })
		}, wantErr: true, wantAttempts: 3, wantStubbed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := workflowtest.New(tt.opts...)
			if tt.stub != nil {
				tt.stub(env)
			}
			run, err := workflowtest.Start(ctx, env, Steps{}, "in")
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if tt.wantErr {
				var re *workflow.RunError
				if !errors.As(err, &re) {
					t.Fatalf("Result = %q, %v; want a *workflow.RunError", got, err)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Result = %q, %v; want %q", got, err, tt.want)
			}
			if a := env.Calls("a"); len(a) != 1 || a[0].Stubbed || string(a[0].Input) != `"in"` || string(a[0].Output) != `"real a"` {
				t.Fatalf("calls of a = %+v", a)
			}
			b := env.Calls("b")
			if len(b) != tt.wantAttempts {
				t.Fatalf("%d calls of b, want %d: %+v", len(b), tt.wantAttempts, b)
			}
			for i, c := range b {
				if c.Attempt != i+1 || c.Stubbed != tt.wantStubbed || c.RunID != run.ID() || c.StepID != "step_2" || string(c.Input) != `"real a"` {
					t.Fatalf("call %d of b = %+v", i, c)
				}
			}
			if n := len(env.Calls("")); n != 1+tt.wantAttempts {
				t.Fatalf("%d calls in all, want %d", n, 1+tt.wantAttempts)
			}
			ops, err := run.Ops(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != 2 || ops[1].Name != "b" || ops[1].Attempts != tt.wantAttempts || !ops[1].Done || (ops[1].Error != nil) != tt.wantErr {
				t.Fatalf("ops = %+v", ops)
			}
			if tt.wantAttempts == 3 && !tt.wantErr {
				// Two retries an hour apart took no wall time but two virtual hours.
				if d := env.Now().Sub(env.StartTime()); d < 3*time.Hour {
					t.Fatalf("virtual clock moved %s, want at least 3h", d)
				}
			}
		})
	}
}

func TestHooks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		payload Approval
		want    Receipt
	}{
		{name: "approved", payload: Approval{OK: true, By: "dana"},
			want: Receipt{Status: "charged", Reserved: "res_o1", Charge: "ch_o1_500", ApprovedBy: "dana"}},
		{name: "rejected", payload: Approval{OK: false, By: "dana"},
			want: Receipt{Status: "rejected", Reserved: "res_o1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := workflowtest.New()
			run, err := workflowtest.Start(ctx, env, OrderV1{}, Order{ID: "o1", Cents: 500})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := run.Result(ctx); !errors.Is(err, workflowtest.ErrBlocked) {
				t.Fatalf("Result before the approval: %v, want ErrBlocked", err)
			}
			if status, _ := run.Status(ctx); status != "running" {
				t.Fatalf("status %s, want running", status)
			}
			if err := env.ResumeHook(ctx, "nope", tt.payload); err == nil {
				t.Fatal("ResumeHook with an unknown token succeeded")
			}
			if err := env.ResumeHook(ctx, "approve-o1", tt.payload); err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got.At = time.Time{}
			if got != tt.want {
				t.Fatalf("Result = %+v, want %+v", got, tt.want)
			}
			ops, err := run.Ops(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hook := ops[1]
			if hook.Kind != workflowtest.OpHook || hook.Token != "approve-o1" || len(hook.Payloads) != 1 {
				t.Fatalf("hook op = %+v", hook)
			}
			hooks, err := run.Hooks(ctx)
			if err != nil || len(hooks) != 1 || hooks[0].Status != "disposed" {
				t.Fatalf("hooks = %+v, %v; want one, disposed with the run's end", hooks, err)
			}
		})
	}
}

// Runs recorded in an Env, however they ended, replay clean against their own
// code and report the step OrderV2 inserts.
func TestReplayOfEnvRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// drive takes the run from waiting for its approval to where it is recorded.
		drive      func(context.Context, *workflowtest.Env, *workflowtest.Run[Receipt]) error
		wantStatus string
	}{
		{name: "approved", wantStatus: "completed", drive: func(ctx context.Context, env *workflowtest.Env, _ *workflowtest.Run[Receipt]) error {
			return env.ResumeHook(ctx, "approve-o1", Approval{OK: true})
		}},
		{name: "rejected", wantStatus: "completed", drive: func(ctx context.Context, env *workflowtest.Env, _ *workflowtest.Run[Receipt]) error {
			return env.ResumeHook(ctx, "approve-o1", Approval{OK: false})
		}},
		{name: "charge failed", wantStatus: "failed", drive: func(ctx context.Context, env *workflowtest.Env, _ *workflowtest.Run[Receipt]) error {
			workflowtest.Stub(env, "charge", func(context.Context, Order) (string, error) {
				return "", workflow.Fatal(errors.New("card declined"))
			})
			return env.ResumeHook(ctx, "approve-o1", Approval{OK: true})
		}},
		{name: "cancelled while waiting", wantStatus: "cancelled", drive: func(ctx context.Context, _ *workflowtest.Env, run *workflowtest.Run[Receipt]) error {
			return run.Cancel(ctx, "customer left")
		}},
		{name: "waiting", wantStatus: "running", drive: func(context.Context, *workflowtest.Env, *workflowtest.Run[Receipt]) error {
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			env := workflowtest.New()
			run, err := workflowtest.Start(ctx, env, OrderV1{}, Order{ID: "o1", Cents: 500})
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tt.drive(ctx, env, run); err != nil {
				t.Fatal(err)
			}
			if err := env.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			if status, _ := run.Status(ctx); string(status) != tt.wantStatus {
				t.Fatalf("run is %s, want %s", status, tt.wantStatus)
			}
			evs, err := run.Events(ctx)
			if err != nil {
				t.Fatal(err)
			}
			h := mustJSON(t, evs)
			workflowtest.Replay(t, OrderV1{}, h)
			tb := replayWith(func(tb workflowtest.TB) { workflowtest.Replay(tb, OrderV2{}, h) })
			if len(tb.errors) != 1 || !strings.Contains(tb.errors[0], `at operation 2: history has hook`) {
				t.Fatalf("replay against OrderV2 reported %q, want one nondeterminism error at operation 2", tb.errors)
			}
		})
	}
}

func TestUnregisteredWorkflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	if _, err := workflow.Start(ctx, env.Client(), Steps{}, "x"); err != nil {
		t.Fatal(err)
	}
	err := env.Settle(ctx)
	if !errors.Is(err, workflow.ErrUnknownWorkflow) {
		t.Fatalf("Settle = %v, want ErrUnknownWorkflow", err)
	}
}

func TestStartTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	env := workflowtest.New(workflowtest.WithStartTime(start))
	workflowtest.Stub(env, "send reminder", func(context.Context, string) (string, error) { return "", nil })
	run, err := workflowtest.Start(ctx, env, Trial{}, "ada")
	if err != nil {
		t.Fatal(err)
	}
	at, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(30 * 24 * time.Hour); !at.Equal(want) {
		t.Fatalf("Now after the sleep = %s, want %s", at, want)
	}
}

// Countdown continues as new until it reaches zero.
type Countdown struct{}

func (Countdown) Run(ctx workflow.Context, n int) (int, error) {
	if n == 0 {
		return 100, nil
	}
	if err := workflow.Sleep(ctx, time.Hour); err != nil {
		return 0, err
	}
	return 0, workflow.ContinueAsNew(ctx, n-1)
}

// Result follows a continue-as-new chain to its last run, driving every run of
// it.
func TestResultFollowsContinueAsNew(t *testing.T) {
	t.Parallel()
	env := workflowtest.New()
	workflowtest.Register(env, Countdown{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := workflowtest.Start(ctx, env, Countdown{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != 100 {
		t.Fatalf("Result = %d, %v; want the last run's 100", out, err)
	}
}
