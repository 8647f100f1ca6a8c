package memworld_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldtest"
)

// The runtime's tests trust memworld to behave like a real World.
func TestConformance(t *testing.T) {
	worldtest.Run(t, func(t *testing.T) worlds.World { return memworld.New() })
}

// A cancelled delivery due an hour ahead leaves the queue, and only it.
func TestCancelDeliveryLeavesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := memworld.New()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r1"}
	for _, id := range []string{"wake-x", "other"} {
		if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: id, DueAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.CancelDelivery(ctx, "wake-x"); err != nil {
		t.Fatal(err)
	}
	if q := w.Queued(); len(q) != 1 || q[0].ID != "other" {
		t.Fatalf("queued after cancelling wake-x: %+v", q)
	}
	if err := w.CancelDelivery(ctx, "unknown"); err != nil {
		t.Fatalf("cancel of an unknown id: %v", err)
	}
	// The ID is free again: queuing it is not mistaken for a duplicate.
	if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: "wake-x"}); err != nil {
		t.Fatal(err)
	}
	if q := w.Queued(); len(q) != 2 {
		t.Fatalf("wake-x queued again: %+v", q)
	}
}
