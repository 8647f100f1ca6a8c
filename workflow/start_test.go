package workflow_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// StartEcho returns its input.
type StartEcho struct{}

func (StartEcho) Run(_ workflow.Context, in map[string]int) (map[string]int, error) { return in, nil }

// queueFailsOnce fails its first Queue call, as a queue that was briefly down.
type queueFailsOnce struct {
	worlds.World
	mu     sync.Mutex
	failed bool
}

func (w *queueFailsOnce) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	w.mu.Lock()
	fail := !w.failed
	w.failed = true
	w.mu.Unlock()
	if fail {
		return "", errors.New("queue down")
	}
	return w.World.Queue(ctx, in, opts)
}

// A Start whose run was created but not queued is retried with the same run
// ID and input and returns the run, which then runs; another input is a conflict.
func TestStartRetriedWithTheSameRunID(t *testing.T) {
	t.Parallel()
	base := memworld.New()
	serve(t, base, workflow.Config{}, workflow.Use(StartEcho{}))
	c, err := workflow.NewClient(workflow.Config{World: &queueFailsOnce{World: base}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := map[string]int{"a": 1, "b": 2}
	if _, err := workflow.Start(ctx, c, StartEcho{}, in, workflow.WithRunID("retried")); err == nil {
		t.Fatal("first start succeeded with the queue down")
	}
	run, err := workflow.Start(ctx, c, StartEcho{}, in, workflow.WithRunID("retried"))
	if err != nil {
		t.Fatalf("retried start: %v", err)
	}
	out, err := run.Result(resultCtx(t))
	if err != nil || out["b"] != 2 {
		t.Fatalf("result = %v, %v", out, err)
	}
	if _, err := workflow.Start(ctx, c, StartEcho{}, map[string]int{"a": 9}, workflow.WithRunID("retried")); !errors.Is(err, worlds.ErrRunExists) {
		t.Fatalf("start with other input: %v, want ErrRunExists", err)
	}
	if again, err := workflow.Start(ctx, c, StartEcho{}, in, workflow.WithRunID("retried")); err != nil || again.ID() != "retried" {
		t.Fatalf("start of a finished run with the same input: %v", err)
	}
}
