package awsworld_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// requeueingRunner queues its delivery again under the same ID during the
// first execution and fails it, as a start retried after a lost answer queues
// a run's first delivery again while that delivery runs.
type requeueingRunner struct {
	w        worlds.World
	mu       sync.Mutex
	attempts []int
}

func (r *requeueingRunner) Workflows() []string { return []string{"flows.A"} }

func (r *requeueingRunner) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	r.mu.Lock()
	r.attempts = append(r.attempts, d.Attempt)
	first := len(r.attempts) == 1
	r.mu.Unlock()
	if !first {
		return nil
	}
	if _, err := r.w.Queue(ctx, d.Input, worlds.QueueOptions{ID: d.ID}); err != nil {
		return err
	}
	return errors.New("injected: the first execution fails")
}

func (r *requeueingRunner) seen() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.attempts...)
}

// A delivery queued again under its ID while it runs keeps its count of
// executions: the execution after a failed one is told it is a retry (Attempt
// 2), which the workflow runtime needs to re-queue what the failed execution
// may have left unqueued.
func TestQueueAgainKeepsTheAttemptCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := &requeueingRunner{w: e.w}
	if _, err := e.w.Queue(context.Background(), worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "r1"}, worlds.QueueOptions{ID: "start-r1"}); err != nil {
		t.Fatal(err)
	}
	drain(t, e, awsworld.Queue(e.w, r), map[string]string{e.arn: e.url}, func() bool { return len(r.seen()) >= 2 })
	if got := fmt.Sprint(r.seen()); got != "[1 2]" {
		t.Fatalf("attempts seen %s, want [1 2]", got)
	}
}
