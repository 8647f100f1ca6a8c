package workflowtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
	"github.com/cairn-go/cairn/worlds"
)

// TrialPhase reports its phase through the "phase" query while it waits out a
// trial, and tags the run with its plan.
type TrialPhase struct{}

func (TrialPhase) Run(ctx workflow.Context, days int) (string, error) {
	phase := "starting"
	if err := workflow.SetQueryHandler(ctx, "phase", func(struct{}) (string, error) { return phase, nil }); err != nil {
		return "", err
	}
	if err := workflow.UpsertAttributes(ctx, map[string]string{"plan": "trial"}); err != nil {
		return "", err
	}
	phase = "in trial"
	if err := workflow.Sleep(ctx, time.Duration(days)*24*time.Hour); err != nil {
		return "", err
	}
	phase = "converting"
	if err := workflow.UpsertAttributes(ctx, map[string]string{"plan": "paid"}); err != nil {
		return "", err
	}
	return workflow.Step(ctx, "convert", func(context.Context, int) (string, error) { return "paid", nil }, days)
}

// Env.Query answers from the run's code where it waits; it moves nothing on.
func TestEnvQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := workflowtest.New()
	run, err := workflowtest.Start(ctx, env, TrialPhase{}, 14)
	if err != nil {
		t.Fatal(err)
	}
	var phase string
	// Not started yet: its code runs to its first wait, in the query only.
	if err := env.Query(ctx, run.ID(), "phase", nil, &phase); err != nil || phase != "in trial" {
		t.Fatalf("phase of a pending run = %q, %v", phase, err)
	}
	if r, _ := env.World().GetRun(ctx, run.ID()); r.Status != worlds.RunPending || r.Attributes["plan"] != "" {
		t.Fatalf("the query moved the run on: %s %v", r.Status, r.Attributes)
	}
	if err := env.RunDue(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := env.World().GetRun(ctx, run.ID()); r.Attributes["plan"] != "trial" {
		t.Fatalf("plan while in trial = %v", r.Attributes)
	}
	if err := env.Query(ctx, run.ID(), "phase", nil, &phase); err != nil || phase != "in trial" {
		t.Fatalf("phase during the trial = %q, %v", phase, err)
	}
	if err := env.Query(ctx, run.ID(), "nope", nil, &phase); !errors.Is(err, workflow.ErrQueryNotFound) {
		t.Fatalf("unknown query: %v", err)
	}
	out, err := run.Result(ctx)
	if err != nil || out != "paid" {
		t.Fatalf("result %q, %v", out, err)
	}
	if err := env.Query(ctx, run.ID(), "phase", nil, &phase); err != nil || phase != "converting" {
		t.Fatalf("phase at the end = %q, %v", phase, err)
	}
	if r, _ := env.World().GetRun(ctx, run.ID()); r.Attributes["plan"] != "paid" {
		t.Fatalf("plan at the end = %v", r.Attributes)
	}
}

// A query of the run's state in a test, without moving it on.
func ExampleEnv_Query() {
	ctx := context.Background()
	env := workflowtest.New()
	run, err := workflowtest.Start(ctx, env, TrialPhase{}, 14)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = env.RunDue(ctx) // the run starts and sleeps
	var phase string
	if err := env.Query(ctx, run.ID(), "phase", nil, &phase); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(phase)
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output:
	// in trial
	// paid <nil>
}
