package worlds_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// cancelWorld holds one run and counts the deliveries queued for it; its
// first Queue call fails. RequestCancel needs nothing else of a World.
type cancelWorld struct {
	worlds.World
	run    worlds.Run
	fails  int
	queued int
}

func (w *cancelWorld) GetRun(_ context.Context, runID string) (worlds.Run, error) {
	if runID != w.run.RunID {
		return worlds.Run{}, worlds.ErrRunNotFound
	}
	return w.run, nil
}

func (w *cancelWorld) Append(_ context.Context, _ string, events ...worlds.Event) ([]worlds.Event, error) {
	for _, ev := range events {
		if ev.Type == worlds.EventRunCancelled {
			w.run.Status, w.run.CancelReason = worlds.RunCancelled, ev.Reason
		}
	}
	return events, nil
}

func (w *cancelWorld) Queue(_ context.Context, in worlds.QueueInput, _ worlds.QueueOptions) (string, error) {
	if w.fails > 0 {
		w.fails--
		return "", errors.New("injected: queue unavailable")
	}
	if in.Kind == worlds.DeliverWorkflow && in.RunID == w.run.RunID {
		w.queued++
	}
	return "d", nil
}

// A pending run cancelled while its wake-up cannot be queued is cancelled,
// and the error says the worker was not woken; cancelling it again fails
// with ErrRunFinished and queues the wake-up, whose delivery does the
// cancel's follow-up (children, parent, continuation).
func TestRequestCancelAgainWakesACancelledRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := &cancelWorld{run: worlds.Run{RunID: "r1", WorkflowName: "wf", Status: worlds.RunPending}, fails: 1}
	if _, err := worlds.RequestCancel(ctx, w, "r1", "stop"); err == nil || errors.Is(err, worlds.ErrRunFinished) {
		t.Fatalf("first cancel: %v; want the failed wake-up reported", err)
	}
	if w.run.Status != worlds.RunCancelled || w.queued != 0 {
		t.Fatalf("after the first cancel: %s, %d queued", w.run.Status, w.queued)
	}
	if _, err := worlds.RequestCancel(ctx, w, "r1", "stop"); !errors.Is(err, worlds.ErrRunFinished) {
		t.Fatalf("second cancel: %v; want ErrRunFinished", err)
	}
	if w.queued != 1 {
		t.Fatalf("second cancel queued %d wake-ups, want 1", w.queued)
	}

	// A run that ended otherwise is not woken.
	done := &cancelWorld{run: worlds.Run{RunID: "r2", WorkflowName: "wf", Status: worlds.RunCompleted}}
	if _, err := worlds.RequestCancel(ctx, done, "r2", "stop"); !errors.Is(err, worlds.ErrRunFinished) || done.queued != 0 {
		t.Fatalf("cancel of a completed run: %v, %d queued", err, done.queued)
	}
}
