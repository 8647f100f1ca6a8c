// Package workflowotel traces cairn workflows with OpenTelemetry: one span per
// delivery a worker executes (a run's start or resume, or one step attempt's
// delivery), one span per live step attempt, and run start and finish as events
// on the delivery span. Nothing is emitted for replayed history, because the
// runtime's [workflow.Observer] fires for live work only. No span stays open
// across a suspension: continuity between the processes that advance one run is
// carried by W3C trace context in [worlds.QueueInput.Trace], which [Tracer.World]
// injects when the runtime queues a delivery and [Tracer.Runner] turns into a
// span link when the delivery runs.
package workflowotel

import (
	"context"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// ScopeName is the instrumentation scope of the tracer.
const ScopeName = "github.com/cairn-go/cairn/workflow/workflowotel"

// Attribute keys set on spans.
const (
	AttrRunID        = attribute.Key("workflow.run_id")
	AttrWorkflowName = attribute.Key("workflow.name")
	AttrStepID       = attribute.Key("workflow.step_id")
	AttrStepName     = attribute.Key("workflow.step_name")
	AttrAttempt      = attribute.Key("workflow.attempt")
	AttrStepResult   = attribute.Key("workflow.step_result")
	AttrDeliveryKind = attribute.Key("workflow.delivery.kind")
	AttrDeliveryID   = attribute.Key("workflow.delivery.id")
	AttrReceive      = attribute.Key("workflow.delivery.receive_count")
	// AttrCache says how the run cache served a workflow delivery: "hit" when it
	// resumed the run's cached execution; "miss", "stale" or "off" when it
	// replayed the run from its log (see [workflow.CacheResult]).
	AttrCache = attribute.Key("workflow.delivery.cache")
)

// Options configure a [Tracer].
type Options struct {
	// TracerProvider creates the tracer. Required: the application owns it and its
	// exporter, and shuts them down.
	TracerProvider trace.TracerProvider
	// Propagator encodes trace context into QueueInput.Trace; nil means W3C
	// TraceContext (traceparent, tracestate).
	Propagator propagation.TextMapPropagator
}

// Tracer implements [workflow.Observer] and wraps Runners and Worlds.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

var (
	_ workflow.Observer      = (*Tracer)(nil)
	_ workflow.CacheObserver = (*Tracer)(nil)
)

// New returns a Tracer, or an error when no TracerProvider is given.
func New(opts Options) (*Tracer, error) {
	if opts.TracerProvider == nil {
		return nil, fmt.Errorf("workflowotel: Options.TracerProvider is required")
	}
	if opts.Propagator == nil {
		opts.Propagator = propagation.TraceContext{}
	}
	return &Tracer{tracer: opts.TracerProvider.Tracer(ScopeName), prop: opts.Propagator}, nil
}

type stepSpanKey struct{}

// CacheLookup sets [AttrCache] on the delivery span.
func (t *Tracer) CacheLookup(ctx context.Context, _ workflow.Info, result workflow.CacheResult) {
	trace.SpanFromContext(ctx).SetAttributes(AttrCache.String(string(result)))
}

// CacheEvicted does nothing: an eviction belongs to no delivery's span.
func (t *Tracer) CacheEvicted(workflow.Info, workflow.EvictReason) {}

// RunStarted records a "run started" event on the current delivery span.
func (t *Tracer) RunStarted(ctx context.Context, info workflow.Info) context.Context {
	trace.SpanFromContext(ctx).AddEvent("workflow.run.started", trace.WithAttributes(AttrRunID.String(info.RunID)))
	return ctx
}

// RunFinished records the run's final status on the current delivery span.
func (t *Tracer) RunFinished(ctx context.Context, info workflow.Info, status worlds.RunStatus, err error) context.Context {
	span := trace.SpanFromContext(ctx)
	span.AddEvent("workflow.run.finished", trace.WithAttributes(AttrRunID.String(info.RunID), attribute.String("workflow.run.status", string(status))))
	if err != nil && status == worlds.RunFailed {
		span.RecordError(err)
	}
	return ctx
}

// StepStarted starts the span of one live step attempt.
func (t *Tracer) StepStarted(ctx context.Context, info workflow.Info) context.Context {
	ctx, span := t.tracer.Start(ctx, "workflow.step "+info.StepName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrRunID.String(info.RunID), AttrWorkflowName.String(info.WorkflowName),
			AttrStepID.String(info.StepID), AttrStepName.String(info.StepName), AttrAttempt.Int(info.Attempt)))
	return context.WithValue(ctx, stepSpanKey{}, span)
}

// StepFinished ends the attempt's span; a retrying or failed attempt gets status Error.
func (t *Tracer) StepFinished(ctx context.Context, info workflow.Info, out workflow.StepOutcome) context.Context {
	span, ok := ctx.Value(stepSpanKey{}).(trace.Span)
	if !ok {
		return ctx
	}
	span.SetAttributes(AttrStepResult.String(string(out.Result)))
	if out.Err != nil {
		span.RecordError(out.Err)
		span.SetStatus(codes.Error, out.Err.Error())
	}
	span.End()
	return ctx
}

// Runner wraps r so each delivery runs inside a span linked to the trace context
// that queued it. Register the wrapped runner wherever r would go.
func (t *Tracer) Runner(r worlds.Runner) worlds.Runner { return &runner{inner: r, t: t} }

type runner struct {
	inner worlds.Runner
	t     *Tracer
}

func (r *runner) Workflows() []string { return r.inner.Workflows() }

// Query forwards a query to the wrapped runner (see [worlds.Querier]), so
// queries reach the workflow's code through the wrapper; it adds nothing.
func (r *runner) Query(ctx context.Context, w worlds.World, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	q, ok := r.inner.(worlds.Querier)
	if !ok {
		return nil, fmt.Errorf("%w: the runner of %q (%T) does not answer queries", worlds.ErrNoRunner, run.WorkflowName, r.inner)
	}
	return q.Query(ctx, w, run, name, arg)
}

func (r *runner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	attrs := []attribute.KeyValue{AttrRunID.String(d.Input.RunID), AttrWorkflowName.String(d.Input.WorkflowName),
		AttrDeliveryKind.String(string(d.Input.Kind)), AttrDeliveryID.String(d.ID), AttrReceive.Int(d.Attempt)}
	if d.Input.StepID != "" {
		attrs = append(attrs, AttrStepID.String(d.Input.StepID))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if len(d.Input.Trace) > 0 {
		queued := trace.SpanContextFromContext(r.t.prop.Extract(context.Background(), propagation.MapCarrier(d.Input.Trace)))
		if queued.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: queued, Attributes: []attribute.KeyValue{attribute.String("workflow.link", "queued_by")}}))
		}
	}
	ctx, span := r.t.tracer.Start(ctx, "workflow.deliver "+string(d.Input.Kind)+" "+d.Input.WorkflowName, opts...)
	defer span.End()
	err := r.inner.Run(ctx, r.t.World(w), d)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// World wraps w so Queue records the caller's trace context in QueueInput.Trace
// (unless the caller set it). Every other method is w's own.
//
// The wrapper is a comparable value: wrapping one World twice gives equal
// Worlds, so the run cache, which keeps an execution for the World it ran on,
// recognises it in the next delivery.
func (t *Tracer) World(w worlds.World) worlds.World {
	if tw, ok := w.(tracingWorld); ok && tw.t == t {
		return w
	}
	return tracingWorld{World: w, t: t}
}

type tracingWorld struct {
	worlds.World
	t *Tracer
}

func (w tracingWorld) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	return w.World.Queue(ctx, w.traced(ctx, in), opts)
}

// traced returns in with the caller's trace context, unless it has one.
func (w tracingWorld) traced(ctx context.Context, in worlds.QueueInput) worlds.QueueInput {
	if len(in.Trace) == 0 {
		carrier := propagation.MapCarrier{}
		w.t.prop.Inject(ctx, carrier)
		if len(carrier) > 0 {
			in.Trace = map[string]string(carrier)
		}
	}
	return in
}

// Serve forwards to the wrapped World when it executes its own deliveries, so a
// traced World can still be served.
func (w tracingWorld) Serve(ctx context.Context, r worlds.Runner) error {
	srv, ok := w.World.(worlds.Server)
	if !ok {
		return fmt.Errorf("workflowotel: %T does not implement worlds.Server", w.World)
	}
	return srv.Serve(ctx, r)
}

// StartEager forwards to the wrapped World when it is a
// [worlds.EagerStarter], with the caller's trace context in in.Trace as Queue
// records it, so a traced World still starts runs eagerly and the first
// delivery's span links to the start; otherwise it declines, and the run is
// started the usual way.
func (w tracingWorld) StartEager(ctx context.Context, in worlds.QueueInput, created worlds.Event) (bool, error) {
	es, ok := w.World.(worlds.EagerStarter)
	if !ok {
		return false, nil
	}
	return es.StartEager(ctx, w.traced(ctx, in), created)
}

// SubscribeRun forwards to the wrapped World when it is a
// [worlds.RunNotifier]; otherwise the channel never fires, and waiters poll.
func (w tracingWorld) SubscribeRun(runID string) (<-chan struct{}, func()) {
	if n, ok := w.World.(worlds.RunNotifier); ok {
		return n.SubscribeRun(runID)
	}
	return nil, func() {}
}

// Unwrap returns the wrapped World, so the run cache knows an execution that
// ran on one traced wrapper of a World for the World's.
func (w tracingWorld) Unwrap() worlds.World { return w.World }

// CancelDelivery forwards to the wrapped World when it is a
// [worlds.DeliveryCanceller], so a traced World still withdraws a cancelled
// timer's wake-up. Otherwise it does nothing and returns nil: cancelling is best
// effort, and the delivery that still arrives finds nothing to do.
func (w tracingWorld) CancelDelivery(ctx context.Context, id string) error {
	if dc, ok := w.World.(worlds.DeliveryCanceller); ok {
		return dc.CancelDelivery(ctx, id)
	}
	return nil
}

// SubscribeStream forwards to the wrapped World; it is only called when the
// wrapped World reports LiveStreams.
func (w tracingWorld) SubscribeStream(runID, name string) (<-chan struct{}, func()) {
	if n, ok := w.World.(worlds.StreamNotifier); ok {
		return n.SubscribeStream(runID, name)
	}
	return nil, func() {}
}
