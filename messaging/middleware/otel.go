package middleware

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// OTelOption configures OTel.
type OTelOption func(*otelConfig)

type otelConfig struct {
	tp   trace.TracerProvider
	link bool
}

// WithTracerProvider uses tp instead of the global tracer provider. A nil tp
// is ignored.
func WithTracerProvider(tp trace.TracerProvider) OTelOption {
	return func(c *otelConfig) {
		if tp != nil {
			c.tp = tp
		}
	}
}

// WithLinkFromContext starts each processing span as the root of a new trace
// that links to the incoming span (the one in the handler's context, or the
// one the message's trace context names) instead of continuing that trace.
// Use it when a message's processing should not lengthen its producer's
// trace: fan-out, batch jobs, retries days later. Without an incoming span
// the processing span is a root with no link.
func WithLinkFromContext() OTelOption {
	return func(c *otelConfig) { c.link = true }
}

// OTel starts a consumer span named "loafer.process/<routeName>" per
// message, as loafer-awsx does, continuing a W3C trace context carried in the
// "traceparent"/"tracestate" message attributes (or linking to it, with
// WithLinkFromContext). The span carries messaging.system "aws_sqs",
// messaging.destination.name routeName, messaging.message.id (omitted for a
// nil message), messaging.operation.type and
// messaging.aws.sqs.receive_count. Its status is Ok when the handler
// succeeds and Error, with the error recorded, when it fails or panics.
func OTel(routeName string, opts ...OTelOption) Middleware {
	cfg := otelConfig{}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	tracer := cfg.tp.Tracer("github.com/cairn-go/cairn/messaging")
	prop := propagation.TraceContext{}
	name := "loafer.process/" + routeName
	return func(next Handler) Handler {
		return func(ctx context.Context, msg Message) error {
			attrs := make([]attribute.KeyValue, 0, 5)
			attrs = append(attrs,
				attribute.String("messaging.system", "aws_sqs"),
				attribute.String("messaging.destination.name", routeName),
				attribute.String("messaging.operation.type", "process"))
			if msg != nil {
				if msg.Attribute("traceparent") != "" {
					ctx = prop.Extract(ctx, propagation.MapCarrier(msg.Attributes()))
				}
				attrs = append(attrs,
					attribute.String("messaging.message.id", identity(msg)),
					attribute.String("messaging.aws.sqs.receive_count", strconv.Itoa(ReceiveCount(msg))))
			}
			start := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
			if cfg.link {
				if in := trace.SpanContextFromContext(ctx); in.IsValid() {
					start = append(start, trace.WithLinks(trace.Link{SpanContext: in}))
				}
				start = append(start, trace.WithNewRoot())
			}
			ctx, span := tracer.Start(ctx, name, start...)
			returned := false
			defer func() {
				if !returned {
					span.SetStatus(codes.Error, "handler panicked")
				}
				span.End()
			}()
			err := next(ctx, msg)
			returned = true
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				return err
			}
			span.SetStatus(codes.Ok, "")
			return nil
		}
	}
}
