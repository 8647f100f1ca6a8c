package workflowotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/workflow/workflowotel"
	"github.com/cairn-go/cairn/worlds"
)

// The traced World withdraws a delivery through the World it wraps, so the
// runtime's cancel of a timer's wake-up is not lost behind the wrapper.
func TestTracedWorldCancelsDeliveries(t *testing.T) {
	t.Parallel()
	tracer, err := workflowotel.New(workflowotel.Options{TracerProvider: trace.NewTracerProvider()})
	if err != nil {
		t.Fatal(err)
	}
	inner := memworld.New()
	dc, ok := tracer.World(inner).(worlds.DeliveryCanceller)
	if !ok {
		t.Fatal("the traced World is not a worlds.DeliveryCanceller")
	}
	ctx := context.Background()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r1"}
	if _, err := inner.Queue(ctx, in, worlds.QueueOptions{ID: "wake-x", DueAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := dc.CancelDelivery(ctx, "wake-x"); err != nil {
		t.Fatal(err)
	}
	if q := inner.Queued(); len(q) != 0 {
		t.Fatalf("queued after the cancel: %+v", q)
	}
}
