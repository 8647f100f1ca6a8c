package workflow_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// retryLostWorld commits the first append of a step_retrying and then reports
// a failure: the World applied the write but its answer was lost.
type retryLostWorld struct {
	worlds.World
	mu   sync.Mutex
	lost bool
}

func (l *retryLostWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	stored, err := l.World.Append(ctx, runID, events...)
	if err != nil {
		return stored, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lost && len(events) == 1 && events[0].Type == worlds.EventStepRetrying {
		l.lost = true
		return nil, errors.New("injected: append applied, answer lost")
	}
	return stored, nil
}

// FailOnce runs one step that fails its first attempt.
type FailOnce struct{ calls *atomic.Int32 }

func (f FailOnce) Run(ctx workflow.Context, n int) (int, error) {
	return workflow.Step(ctx, "flaky", func(context.Context, int) (int, error) {
		if f.calls.Add(1) == 1 {
			return 0, errors.New("first attempt fails")
		}
		return n + 1, nil
	}, n, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
}

// A step attempt that fails records step_retrying and queues the step's next
// attempt at its retry time. When that append is applied but its answer lost,
// the resend is refused (the step is no longer running), and the attempt must
// still queue the retry: waking the workflow alone left the run parked on a
// step no delivery would ever run.
func TestRetryRecordedWithLostAnswerStillRuns(t *testing.T) {
	t.Parallel()
	for _, queued := range []bool{true, false} {
		t.Run(map[bool]string{true: "queued", false: "inline"}[queued], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := memworld.New()
			cl, err := workflow.NewClient(workflow.Config{World: w, QueueSteps: queued})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.FlushCache)
			wf := FailOnce{calls: &atomic.Int32{}}
			lw := &retryLostWorld{World: w}
			r := worldRunner{inner: cl.Runner(workflow.Use(wf)), world: lw}
			run, err := workflow.Start(ctx, cl, wf, 1)
			if err != nil {
				t.Fatal(err)
			}
			driveUntil(t, w, r, run.ID())
			if !lw.lost {
				t.Fatal("no answer was lost; the test proved nothing")
			}
			if got, err := run.Result(resultCtx(t)); err != nil || got != 2 {
				t.Fatalf("Result = %d, %v; want 2", got, err)
			}
		})
	}
}
