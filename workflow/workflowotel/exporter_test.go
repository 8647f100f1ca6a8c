package workflowotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowotel"
	"github.com/cairn-go/cairn/worlds/local"
)

// failingExporter rejects every batch and blocks shutdown until its context ends.
type failingExporter struct{ calls atomic.Int32 }

func (e *failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	e.calls.Add(1)
	return errors.New("collector unreachable")
}

func (e *failingExporter) Shutdown(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// TestExporterFailureDoesNotAffectRuns: tracing is observation only, so an
// exporter that fails every export neither fails nor slows the workflow, and the
// application's bounded shutdown of its provider returns at its deadline.
func TestExporterFailureDoesNotAffectRuns(t *testing.T) {
	ctx := context.Background()
	exp := &failingExporter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Millisecond)))
	tracer, err := workflowotel.New(workflowotel.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	world, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: tracer.World(world), Observer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- client.Serve(sctx, tracer.Runner(workflow.Use(Shout{}))) }()
	run, err := workflow.Start(ctx, client, Shout{}, "x")
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	if out, err := run.Result(rctx); err != nil || out != "X" {
		t.Fatalf("run with a failing exporter: %q, %v", out, err)
	}
	cancel()
	<-done
	sdctx, sdcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer sdcancel()
	if err := tp.Shutdown(sdctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("bounded shutdown: %v", err)
	}
	if exp.calls.Load() == 0 {
		t.Error("the exporter was never called: the test proves nothing")
	}
}
