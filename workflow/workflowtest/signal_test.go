package workflowtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

// Review waits up to two days for a "decision" signal.
type Review struct{}

func (Review) Run(ctx workflow.Context, doc string) (string, error) {
	ch := workflow.NewSignalChannel[string](ctx, "decision")
	i, err := workflow.Select(ctx, ch, workflow.NewTimer(ctx, 48*time.Hour))
	if err != nil || i == 1 {
		return doc + ": no decision", err
	}
	d, err := ch.Receive(ctx)
	return doc + ": " + d, err
}

// Env.Signal sent with Env.At arrives while the run's timer is pending, at
// that virtual time; without it the timer fires; SignalWithStart's signal is
// there when the run starts.
func TestEnvSignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		at    time.Duration // 0: no signal
		want  string
		until time.Duration
	}{
		{"decided in time", 3 * time.Hour, "spec: approved", 3 * time.Hour},
		{"no decision", 0, "spec: no decision", 48 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := workflowtest.New()
			run, err := workflowtest.Start(ctx, env, Review{}, "spec")
			if err != nil {
				t.Fatal(err)
			}
			if tc.at > 0 {
				env.At(tc.at, func() {
					if err := env.Signal(ctx, run.ID(), "decision", "approved"); err != nil {
						t.Error(err)
					}
				})
			}
			out, err := run.Result(ctx)
			if err != nil || out != tc.want {
				t.Fatalf("Result = %q, %v; want %q", out, err, tc.want)
			}
			if got := env.Now().Sub(env.StartTime()); got != tc.until {
				t.Errorf("the run ended %s after its start, want %s", got, tc.until)
			}
		})
	}
	env := workflowtest.New()
	run, err := workflowtest.SignalWithStart(ctx, env, Review{}, "memo", "decision", "rejected", workflow.WithRunID("memo-1"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != "memo: rejected" || env.Now() != env.StartTime() {
		t.Fatalf("SignalWithStart: %q, %v at %s; want the signal read at once", out, err, env.Now().Sub(env.StartTime()))
	}
}
