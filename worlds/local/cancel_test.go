package local

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// CancelDelivery deletes a pending row, here a timer's wake-up an hour ahead,
// keeps a row a worker has claimed, and deletes it once that worker's lease ran
// out (the worker died; the delivery is pending again).
func TestCancelDelivery(t *testing.T) {
	ctx := context.Background()
	var wallOffset atomic.Int64
	w, err := Open(ctx, Config{Path: Memory, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.cfg.wall = func() time.Time { return time.Now().Add(time.Duration(wallOffset.Load())) }
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}
	for _, q := range []struct {
		id  string
		due time.Time
	}{{"busy", time.Time{}}, {"wake-x", time.Now().Add(time.Hour)}, {"other", time.Now().Add(time.Hour)}} {
		if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: q.id, DueAt: q.due}); err != nil {
			t.Fatal(err)
		}
	}
	pending := func(want int) {
		t.Helper()
		if n, err := w.pendingDeliveries(ctx); err != nil || n != want {
			t.Fatalf("%d deliveries queued (%v), want %d", n, err, want)
		}
	}
	d, _, err := w.claim(ctx)
	if err != nil || d == nil || d.ID != "busy" {
		t.Fatalf("claim = %+v, %v", d, err)
	}
	if err := w.CancelDelivery(ctx, "wake-x"); err != nil {
		t.Fatal(err)
	}
	pending(2)
	var id string
	if err := w.db.QueryRowContext(ctx, `SELECT id FROM deliveries WHERE id = 'wake-x'`).Scan(&id); err == nil {
		t.Fatal("wake-x still queued")
	}
	if err := w.CancelDelivery(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	pending(2) // claimed: kept
	if err := w.finish(ctx, d, errors.New("failed"), false); err != nil {
		t.Fatal(err)
	}
	pending(2) // released for a retry: pending again, so it can be cancelled now
	if err := w.CancelDelivery(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	pending(1)

	// A claim whose lease ran out is a dead worker's: the row can be cancelled.
	if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: "orphan"}); err != nil {
		t.Fatal(err)
	}
	if d, _, err := w.claim(ctx); err != nil || d == nil || d.ID != "orphan" {
		t.Fatalf("claim = %+v, %v", d, err)
	}
	if err := w.CancelDelivery(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	pending(2)
	wallOffset.Store(int64(2 * time.Minute))
	if err := w.CancelDelivery(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	pending(1)

	if err := w.CancelDelivery(ctx, "unknown"); err != nil {
		t.Fatalf("unknown id: %v", err)
	}
	if err := w.CancelDelivery(ctx, ""); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("empty id: %v", err)
	}
}
