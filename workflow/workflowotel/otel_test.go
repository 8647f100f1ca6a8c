package workflowotel_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowotel"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// Fanout runs two parallel branches, then a step that fails once, then sleeps
// (a suspension and resume), then a last step.
type Fanout struct{ flaky *atomic.Int32 }

func (f Fanout) Run(ctx workflow.Context, n int) (int, error) {
	double := func(_ context.Context, x int) (int, error) { return 2 * x, nil }
	a := workflow.Go(ctx, "left", double, n)
	b := workflow.Go(ctx, "right", double, n+1)
	x, err := a.Get(ctx)
	if err != nil {
		return 0, err
	}
	y, err := b.Get(ctx)
	if err != nil {
		return 0, err
	}
	sum, err := workflow.Step(ctx, "flaky", func(_ context.Context, s int) (int, error) {
		if f.flaky.Add(1) == 1 {
			return 0, errors.New("transient")
		}
		return s, nil
	}, x+y, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Multiplier: 1}))
	if err != nil {
		return 0, err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return 0, err
	}
	return workflow.Step(ctx, "last", func(_ context.Context, s int) (int, error) { return s + 1, nil }, sum)
}

func TestSpansPerLiveAttempt(t *testing.T) {
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(ctx)
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
	go func() { done <- client.Serve(sctx, tracer.Runner(workflow.Use(Fanout{flaky: new(atomic.Int32)}))) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	defer stop()

	startCtx, root := tp.Tracer("test").Start(ctx, "caller")
	run, err := workflow.Start(startCtx, client, Fanout{}, 3)
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	out, err := run.Result(rctx)
	if err != nil || out != 15 {
		t.Fatalf("result %d, %v", out, err)
	}
	stop()

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	steps := map[string][]int{} // step name -> attempts
	var deliveries, runStarted, runFinished, linked int
	cache := map[any]int{} // workflow.delivery.cache of workflow deliveries

	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	for _, s := range spans {
		attrs := map[string]any{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
		}
		switch {
		case len(s.Name()) > 14 && s.Name()[:14] == "workflow.step ":
			steps[attrs["workflow.step_name"].(string)] = append(steps[attrs["workflow.step_name"].(string)], int(attrs["workflow.attempt"].(int64)))
			if attrs["workflow.run_id"] != run.ID() {
				t.Errorf("step span without run id: %v", attrs)
			}
			parent, ok := byID[s.Parent().SpanID()]
			if !ok || parent.Name()[:16] != "workflow.deliver" {
				t.Errorf("step span %s is not a child of its delivery span", s.Name())
			}
		case len(s.Name()) > 16 && s.Name()[:16] == "workflow.deliver":
			deliveries++
			if attrs["workflow.delivery.kind"] == "workflow" {
				cache[attrs["workflow.delivery.cache"]]++
			}
			for _, l := range s.Links() {
				if _, ok := byID[l.SpanContext.SpanID()]; ok || l.SpanContext.SpanID() == root.SpanContext().SpanID() {
					linked++
					break
				}
			}
			for _, ev := range s.Events() {
				switch ev.Name {
				case "workflow.run.started":
					runStarted++
				case "workflow.run.finished":
					runFinished++
				}
			}
		}
	}
	// One span per live attempt: each branch once, the flaky step twice, the last once.
	want := map[string][]int{"left": {1}, "right": {1}, "flaky": {1, 2}, "last": {1}}
	for name, attempts := range want {
		got := steps[name]
		if len(got) != len(attempts) {
			t.Errorf("step %s: attempts %v, want %v", name, got, attempts)
			continue
		}
		seen := map[int]bool{}
		for _, a := range got {
			seen[a] = true
		}
		for _, a := range attempts {
			if !seen[a] {
				t.Errorf("step %s: attempts %v, want %v", name, got, attempts)
			}
		}
	}
	if len(steps) != len(want) {
		t.Errorf("unexpected step spans: %v", steps)
	}
	// The run is started and finished once although the workflow code was replayed
	// in every delivery.
	if runStarted != 1 || runFinished != 1 {
		t.Errorf("run started %d times, finished %d times in spans; want 1 and 1", runStarted, runFinished)
	}
	// Every delivery is linked to the span that queued it (the caller, a step, or
	// an earlier delivery): continuity without an open span across suspension.
	if deliveries < 6 || linked != deliveries {
		t.Errorf("%d delivery spans, %d linked to a recorded queuing span", deliveries, linked)
	}
	// The first delivery replays (a miss); the ones after it resume the cached
	// execution unless two arrive at once. Every workflow delivery says which.
	if cache["miss"] < 1 || cache["hit"] < 1 || cache[nil] != 0 {
		t.Errorf("workflow deliveries by workflow.delivery.cache: %v; want misses and hits, none unset", cache)
	}
	t.Logf("%d spans: %d deliveries, steps %v, cache %v", len(spans), deliveries, steps, cache)
}

func TestNewRequiresProvider(t *testing.T) {
	if _, err := workflowotel.New(workflowotel.Options{}); err == nil {
		t.Fatal("nil TracerProvider accepted")
	}
	_ = worlds.DeliverStep
}
