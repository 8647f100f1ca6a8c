package workflowtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
)

// parallelByGoroutine calls workflow.Step from two plain goroutines and sums
// what they send back.
type parallelByGoroutine struct {
	mu   *sync.Mutex
	errs *[]error
}

func (w parallelByGoroutine) Run(ctx workflow.Context, n int) (int, error) {
	res := make(chan int, 2)
	for i := range 2 {
		go func() {
			v, err := workflow.Step(ctx, fmt.Sprintf("s%d", i), func(_ context.Context, n int) (int, error) { return n, nil }, n)
			w.mu.Lock()
			*w.errs = append(*w.errs, err)
			w.mu.Unlock()
			res <- v
		}()
	}
	return <-res + <-res, nil
}

func TestStepFromPlainGoroutinesFails(t *testing.T) {
	t.Parallel()
	env := workflowtest.New()
	var mu sync.Mutex
	var errs []error
	wf := parallelByGoroutine{mu: &mu, errs: &errs}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := workflowtest.Start(ctx, env, wf, 2)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != 0 {
		t.Fatalf("Result = %d, %v; want 0 and no error", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 2 {
		t.Fatalf("%d errors, want one per goroutine", len(errs))
	}
	for _, err := range errs {
		var ge *workflow.GoroutineError
		if !errors.As(err, &ge) || ge.Call != "workflow.Step" || !errors.Is(err, workflow.ErrNotWorkflowGoroutine) {
			t.Errorf("Step from a plain goroutine: %v; want a *GoroutineError naming workflow.Step", err)
		}
	}
	if calls := env.Calls(""); len(calls) != 0 {
		t.Errorf("steps ran: %+v", calls)
	}
}

// nilMap panics in its code.
type nilMap struct{}

func (nilMap) Run(ctx workflow.Context, n int) (int, error) {
	var m map[int]int
	m[n] = n
	return n, nil
}

// Result reports a run blocked on its code's panic at once, instead of
// redelivering it until MaxDeliveries.
func TestResultReportsBlockedRun(t *testing.T) {
	t.Parallel()
	env := workflowtest.New()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := workflowtest.Start(ctx, env, nilMap{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(ctx)
	var be *workflow.BlockedError
	if !errors.As(err, &be) || !errors.Is(err, workflow.ErrWorkflowCode) || be.Blocked.Error.Type != "panic" ||
		!strings.Contains(be.Blocked.Error.Message, "assignment to entry in nil map") || be.Blocked.Error.Stack == "" {
		t.Fatalf("Result = %v, want a *BlockedError holding the panic and its stack", err)
	}
	if st, err := run.Status(ctx); err != nil || st != "running" {
		t.Errorf("status %s, %v; want running", st, err)
	}
}
