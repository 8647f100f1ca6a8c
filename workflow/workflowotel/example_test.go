package workflowotel_test

import (
	"context"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowotel"
	"github.com/cairn-go/cairn/worlds/local"
)

type Shout struct{}

func (Shout) Run(ctx workflow.Context, s string) (string, error) {
	return workflow.Step(ctx, "upper", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil }, s)
}

func Example() {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder() // use your exporter in production
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(ctx)
	tracer, _ := workflowotel.New(workflowotel.Options{TracerProvider: tp})

	world, _ := local.Open(ctx, local.Config{Path: local.Memory})
	defer world.Close()
	// The Tracer is the Observer; its World and Runner wrappers carry trace
	// context across deliveries.
	client, _ := workflow.NewClient(workflow.Config{World: tracer.World(world), Observer: tracer})
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Serve(sctx, tracer.Runner(workflow.Use(Shout{}))) }()

	run, _ := workflow.Start(ctx, client, Shout{}, "hi")
	out, _ := run.Result(ctx)
	stop()
	<-done
	steps := 0
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "workflow.step ") {
			steps++
		}
	}
	fmt.Println(out, "step spans:", steps)
	// Output: HI step spans: 1
}
