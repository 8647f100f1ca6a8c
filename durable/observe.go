package durable

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Instrumentation scope of the spans and counters.
const scope = "github.com/cairn-go/cairn/durable"

// Metric names. Live attempts and logical outcomes are separate counters: a
// step whose SUCCEED checkpoint was lost runs twice (two attempts) but finishes
// once, and a replayed step is neither an attempt nor a new outcome.
const (
	MetricInvocations = "cairn.durable.invocations"     // attribute status: SUCCEEDED, FAILED, PENDING, error
	MetricAttempts    = "cairn.durable.step.attempts"   // attributes step, result: succeeded, failed (live runs of a step body)
	MetricOperations  = "cairn.durable.step.operations" // attributes step, result: succeeded, failed (logical outcomes checkpointed)
	MetricReplayed    = "cairn.durable.step.replayed"   // attribute step (outcomes read from history, body not run)
	MetricAttemptTime = "cairn.durable.step.attempt.duration"
)

type counters struct {
	invocations, attempts, operations, replays metric.Int64Counter
	duration                                   metric.Float64Histogram
}

func (h *Handler) instrument() error {
	if h.opts.TracerProvider != nil {
		h.tracer = h.opts.TracerProvider.Tracer(scope)
	}
	if h.opts.MeterProvider == nil {
		return nil
	}
	m := h.opts.MeterProvider.Meter(scope)
	c := &counters{}
	var err error
	if c.invocations, err = m.Int64Counter(MetricInvocations, metric.WithDescription("invocations of the durable function, by outcome")); err != nil {
		return err
	}
	if c.attempts, err = m.Int64Counter(MetricAttempts, metric.WithDescription("live attempts of step bodies")); err != nil {
		return err
	}
	if c.operations, err = m.Int64Counter(MetricOperations, metric.WithDescription("step outcomes checkpointed")); err != nil {
		return err
	}
	if c.replays, err = m.Int64Counter(MetricReplayed, metric.WithDescription("step outcomes replayed from history")); err != nil {
		return err
	}
	if c.duration, err = m.Float64Histogram(MetricAttemptTime, metric.WithUnit("s"), metric.WithDescription("duration of live step attempts")); err != nil {
		return err
	}
	h.counters = c
	return nil
}

func (c *counters) replayed(ctx context.Context, step string) {
	if c != nil {
		c.replays.Add(ctx, 1, metric.WithAttributes(attribute.String("step", step)))
	}
}

func (c *counters) finished(ctx context.Context, step, result string) {
	if c != nil {
		c.operations.Add(ctx, 1, metric.WithAttributes(attribute.String("step", step), attribute.String("result", result)))
	}
}

// startInvocationSpan opens the one span of this invocation. A resumed execution
// gets a new span in a new invocation; nothing stays open across a suspension,
// and the execution ARN attribute ties the invocations together.
func (h *Handler) startInvocationSpan(ctx context.Context, x *execution) (context.Context, trace.Span) {
	if h.tracer == nil {
		return ctx, nil
	}
	return h.tracer.Start(ctx, "durable.invocation", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("durable.execution_arn", x.arn),
		attribute.Bool("durable.replaying", x.replaying.Load()),
		attribute.Int("durable.history_operations", len(x.history))))
}

func (h *Handler) endInvocationSpan(span trace.Span, out Output, err error) {
	status := string(out.Status)
	if err != nil {
		status = "error"
	}
	if h.counters != nil {
		h.counters.invocations.Add(context.Background(), 1, metric.WithAttributes(attribute.String("status", status)))
	}
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("durable.status", status))
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case out.Status == StatusFailed && out.Error != nil:
		span.SetStatus(codes.Error, aws.ToString(out.Error.ErrorMessage))
	}
	// PENDING is a suspension, not an error: the span ends OK.
	span.End()
}

// runAttempt runs one live attempt of a step body inside its own span, counting
// it. A replayed step never gets here.
func runAttempt[T any](dc *Context, id, name string, attempt int, fn func(ctx context.Context) (T, error)) (T, error) {
	x := dc.x
	ctx := withInfo(x.ctx, Info{ExecutionArn: x.arn, OperationID: id, OperationName: name, Attempt: attempt})
	var span trace.Span
	if x.h.tracer != nil {
		ctx, span = x.h.tracer.Start(ctx, "durable.step "+name, trace.WithAttributes(
			attribute.String("durable.execution_arn", x.arn), attribute.String("durable.operation_id", id),
			attribute.String("durable.operation_name", name), attribute.Int("durable.attempt", attempt)))
	}
	began := time.Now()
	v, err := fn(ctx)
	result := "succeeded"
	if err != nil {
		result = "failed"
	}
	if c := x.metrics; c != nil {
		attrs := metric.WithAttributes(attribute.String("step", name), attribute.String("result", result))
		c.attempts.Add(x.ctx, 1, attrs)
		c.duration.Record(x.ctx, time.Since(began).Seconds(), metric.WithAttributes(attribute.String("step", name)))
	}
	if span != nil {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	return v, err
}
