package workflowtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

// ApproveOrTimeout waits for an approval hook or a 48 h timeout, whichever first.
type ApproveOrTimeout struct{}

func (ApproveOrTimeout) Run(ctx workflow.Context, token string) (string, error) {
	hk, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	timer := workflow.NewTimer(ctx, 48*time.Hour)
	i, err := workflow.Select(ctx, hk, timer)
	if err != nil {
		return "", err
	}
	if i == 1 {
		return "timed out", nil
	}
	who, err := hk.Receive(ctx)
	return "approved by " + who, err
}

// Env.At delivers a hook payload at a virtual time while the run's timer is
// pending: Result stops at the callback instead of jumping past it to the
// timer. Without At, a payload cannot arrive before the timeout.
func TestAtResumesHookWhileTimerPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		at   time.Duration
		want string
	}{
		{"before the timeout", 3 * time.Hour, "approved by ann"},
		{"after the timeout", 50 * time.Hour, "timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := workflowtest.New()
			var calledAt time.Time
			env.At(tc.at, func() {
				calledAt = env.Now()
				if err := env.ResumeHook(ctx, "ok", "ann"); err != nil && tc.at < 48*time.Hour {
					t.Error(err)
				}
			})
			run, err := workflowtest.Start(ctx, env, ApproveOrTimeout{}, "ok")
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(ctx)
			if err != nil || got != tc.want {
				t.Fatalf("Result = %q, %v; want %q", got, err, tc.want)
			}
			if tc.at < 48*time.Hour && !calledAt.Equal(env.StartTime().Add(tc.at)) {
				t.Fatalf("callback ran at %v, want start+%v", calledAt, tc.at)
			}
		})
	}
}

// Env.RunDue runs what is due now and never moves the clock: the run stays
// waiting on its timer until the test advances time.
func TestRunDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	run, err := workflowtest.Start(ctx, env, ApproveOrTimeout{}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.RunDue(ctx); err != nil {
		t.Fatal(err)
	}
	if !env.Now().Equal(env.StartTime()) {
		t.Fatalf("RunDue moved the clock to %v", env.Now())
	}
	hooks, err := run.Hooks(ctx)
	if err != nil || len(hooks) != 1 {
		t.Fatalf("hooks %v, %v; want the run to have reached its hook", hooks, err)
	}
	if st, _ := run.Status(ctx); st.Terminal() {
		t.Fatalf("run %s after RunDue at the start", st)
	}
	env.Advance(48 * time.Hour)
	if err := env.RunDue(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := run.Status(ctx); !st.Terminal() {
		t.Fatalf("run %s after RunDue at the timeout", st)
	}
	// A callback due now runs too.
	ran := false
	env.At(0, func() { ran = true })
	if err := env.RunDue(ctx); err != nil || !ran {
		t.Fatalf("RunDue: %v, callback ran %v", err, ran)
	}
}

// Greeter is a child workflow: it waits for a hook.
type Greeter struct{}

func (Greeter) Run(ctx workflow.Context, name string) (string, error) {
	hk, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: "greet-" + name})
	if err != nil {
		return "", err
	}
	msg, err := hk.Receive(ctx)
	return msg + " " + name, err
}

// Party starts one Greeter child per name and joins their greetings.
type Party struct{}

func (Party) Run(ctx workflow.Context, names []string) (string, error) {
	var kids []*workflow.ChildRun[string]
	for _, n := range names {
		kids = append(kids, workflow.StartChild(ctx, Greeter{}, n))
	}
	var out []string
	for _, k := range kids {
		s, err := k.Get(ctx)
		if err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, ", "), nil
}

// A parent blocked on children that wait for hooks reports the children's
// tokens in ErrBlocked: they are what the test must resume.
func TestErrBlockedListsDescendantTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	workflowtest.Register(env, Greeter{})
	run, err := workflowtest.Start(ctx, env, Party{}, []string{"ann", "bob"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	if !errors.Is(err, workflowtest.ErrBlocked) || !strings.Contains(err.Error(), `"greet-ann"`) || !strings.Contains(err.Error(), `"greet-bob"`) {
		t.Fatalf("Result: %v; want ErrBlocked naming the children's tokens", err)
	}
	for _, tok := range []string{"greet-ann", "greet-bob"} {
		if err := env.ResumeHook(ctx, tok, "hi"); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := run.Result(ctx); err != nil || got != "hi ann, hi bob" {
		t.Fatalf("Result = %q, %v", got, err)
	}
}

// StubChild replaces a child workflow: the parent gets the stub's output, or
// its error, and Calls lists each stubbed child run.
func TestStubChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	workflowtest.StubChild(env, Greeter{}, func(_ context.Context, name string) (string, error) {
		if name == "eve" {
			return "", errors.New("eve is not invited")
		}
		return "hello " + name, nil
	})
	run, err := workflowtest.Start(ctx, env, Party{}, []string{"ann", "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(ctx); err != nil || got != "hello ann, hello bob" {
		t.Fatalf("Result = %q, %v", got, err)
	}
	calls := env.Calls(workflowtest.ChildStubStep + "workflowtest_test.Greeter")
	if len(calls) != 2 {
		t.Fatalf("stub calls %+v, want 2", env.Calls(""))
	}
	bad, err := workflowtest.Start(ctx, env, Party{}, []string{"eve"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Result(ctx); err == nil || !strings.Contains(err.Error(), "eve is not invited") {
		t.Fatalf("Result: %v; want the stub's error", err)
	}
}
