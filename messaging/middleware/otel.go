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

type otelConfig struct{ tp trace.TracerProvider }

// WithTracerProvider uses tp instead of the global tracer provider. A nil tp
// is ignored.
func WithTracerProvider(tp trace.TracerProvider) OTelOption {
	return func(c *otelConfig) {
		if tp != nil {
			c.tp = tp
		}
	}
}

// OTel starts a consumer span per message, continuing a W3C trace context
// carried in the "traceparent"/"tracestate" message attributes, and records
// the handler's error on it.
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
	return func(next Handler) Handler {
		return func(ctx context.Context, msg Message) error {
			if msg != nil && msg.Attribute("traceparent") != "" {
				ctx = prop.Extract(ctx, propagation.MapCarrier(msg.Attributes()))
			}
			ctx, span := tracer.Start(ctx, routeName+" process",
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("messaging.system", "aws_sqs"),
					attribute.String("messaging.destination.name", QueueName(msg)),
					attribute.String("messaging.message.id", MessageID(msg)),
					attribute.String("messaging.operation.type", "process"),
					attribute.String("messaging.aws.sqs.receive_count", strconv.Itoa(ReceiveCount(msg))),
				))
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
			}
			return err
		}
	}
}
