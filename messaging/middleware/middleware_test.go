package middleware_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
)

func TestChainOrder(t *testing.T) {
	t.Parallel()
	var got []string
	tag := func(s string) middleware.Middleware {
		return func(next middleware.Handler) middleware.Handler {
			return func(ctx context.Context, m middleware.Message) error { got = append(got, s); return next(ctx, m) }
		}
	}
	h := middleware.Chain(tag("a"), nil, tag("b"))(func(context.Context, middleware.Message) error { got = append(got, "h"); return nil })
	if err := h(context.Background(), messagingtest.NewMessage("x", nil)); err != nil || strings.Join(got, "") != "abh" {
		t.Fatalf("%v %v", got, err)
	}
}

func TestRecovery(t *testing.T) {
	t.Parallel()
	h := middleware.Recovery(nil)(func(context.Context, middleware.Message) error { panic("boom") })
	err := h(context.Background(), messagingtest.NewMessage("x", nil))
	if !errors.Is(err, merrors.ErrPanic) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	if err := middleware.Logging(nil)(func(context.Context, middleware.Message) error { return nil })(context.Background(), messagingtest.NewMessage("x", nil)); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsNames(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	fail := errors.New("x")
	// Two routes on one registry share the families.
	for _, route := range []string{"a", "b"} {
		h := middleware.Metrics(route, middleware.WithMetricsRegisterer(reg))(func(_ context.Context, m middleware.Message) error {
			if string(m.Body()) == "bad" {
				return fail
			}
			return nil
		})
		_ = h(context.Background(), messagingtest.NewMessage("ok", nil))
		_ = h(context.Background(), messagingtest.NewMessage("bad", nil))
	}
	middleware.DLQCounter(middleware.WithMetricsRegisterer(reg))("a")
	n, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no metrics")
	}
	mfs, _ := reg.Gather()
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{middleware.MetricReceived, middleware.MetricProcessed, middleware.MetricErrors,
		middleware.MetricDuration, middleware.MetricInflight, middleware.MetricDeadLetter,
		"loafer_messages_received_total", "loafer_messages_dlq_total"} {
		if !names[want] {
			t.Errorf("missing %s (have %v)", want, names)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP loafer_messages_processed_total Total messages processed
# TYPE loafer_messages_processed_total counter
loafer_messages_processed_total{route="a",status="error"} 1
loafer_messages_processed_total{route="a",status="success"} 1
loafer_messages_processed_total{route="b",status="error"} 1
loafer_messages_processed_total{route="b",status="success"} 1
`), middleware.MetricProcessed); err != nil {
		t.Fatal(err)
	}
}

func TestOTelSpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := middleware.OTel("orders", middleware.WithTracerProvider(tp))(func(context.Context, middleware.Message) error { return errors.New("x") })
	msg := messagingtest.NewMessage("x", map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	_ = h(context.Background(), msg)
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "loafer.process/orders" || spans[0].Status().Code.String() != "Error" {
		t.Fatalf("spans %v", spans)
	}
	if spans[0].SpanContext().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("trace context not continued: %s", spans[0].SpanContext().TraceID())
	}
}

// With the documented order (Recovery, Metrics) a panic passes through
// Metrics on its way to Recovery: inflight must come back down, and the
// error and the duration must be recorded.
func TestMetricsRecordPanic(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := middleware.Chain(middleware.Recovery(nil), middleware.Metrics("r", middleware.WithMetricsRegisterer(reg)))(
		func(context.Context, middleware.Message) error { panic("boom") })
	if err := h(context.Background(), messagingtest.NewMessage("x", nil)); !errors.Is(err, merrors.ErrPanic) {
		t.Fatalf("err = %v", err)
	}
	count := func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				switch {
				case m.Gauge != nil:
					sum += m.Gauge.GetValue()
				case m.Counter != nil:
					sum += m.Counter.GetValue()
				case m.Histogram != nil:
					sum += float64(m.Histogram.GetSampleCount())
				}
			}
		}
		return sum
	}
	if got := count(middleware.MetricInflight); got != 0 {
		t.Errorf("inflight = %v after a panic, want 0", got)
	}
	if got := count(middleware.MetricErrors); got != 1 {
		t.Errorf("errors = %v, want 1", got)
	}
	if got := count(middleware.MetricDuration); got != 1 {
		t.Errorf("duration samples = %v, want 1", got)
	}
	if got := count(middleware.MetricProcessed); got != 1 {
		t.Errorf("processed = %v, want 1 (status error)", got)
	}
}

// The observing middlewares pass a nil message to the handler, which decides
// what it means, instead of panicking on it themselves.
func TestNilMessage(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	want := errors.New("nil message")
	tests := []struct {
		name string
		mw   middleware.Middleware
	}{
		{"logging", middleware.Logging(nil)},
		{"recovery", middleware.Recovery(nil)},
		{"otel", middleware.OTel("r", middleware.WithTracerProvider(tp))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.mw(func(_ context.Context, m middleware.Message) error {
				if m != nil {
					return errors.New("message not nil")
				}
				return want
			})
			if err := h(context.Background(), nil); !errors.Is(err, want) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	panicking := middleware.Recovery(nil)(middleware.Logging(nil)(func(context.Context, middleware.Message) error { panic("boom") }))
	if err := panicking(context.Background(), nil); !errors.Is(err, merrors.ErrPanic) {
		t.Fatalf("err = %v", err)
	}
}

// The metric families keep loafer-awsx v0.6.0's HELP text, so a registry
// scraped before and after the migration exposes identical metadata.
func TestMetricsHelpMatchesLoaferAWSX(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := middleware.Metrics("r", middleware.WithMetricsRegisterer(reg))(func(context.Context, middleware.Message) error { return errors.New("x") })
	_ = h(context.Background(), messagingtest.NewMessage("m", nil))
	middleware.DLQCounter(middleware.WithMetricsRegisterer(reg))("r")
	want := map[string]string{
		middleware.MetricReceived:   "Total messages received",
		middleware.MetricProcessed:  "Total messages processed",
		middleware.MetricErrors:     "Total message processing errors",
		middleware.MetricDuration:   "Message processing duration",
		middleware.MetricInflight:   "Messages currently being processed",
		middleware.MetricDeadLetter: "Total messages observed as exhausted (receive count reached maxReceiveCount; redriven by AWS SQS)",
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetHelp()
	}
	for name, help := range want {
		if got[name] != help {
			t.Errorf("%s HELP = %q, want %q", name, got[name], help)
		}
	}
}

// Metrics registers the DLQ family too, so a collector registered for it
// later (by loafer-awsx-era code or a second DLQCounter) meets the existing
// one, and DLQCounter counts on that same family.
func TestMetricsRegistersDLQFamily(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	middleware.Metrics("r", middleware.WithMetricsRegisterer(reg))
	err := reg.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: middleware.MetricDeadLetter,
		Help: "Total messages observed as exhausted (receive count reached maxReceiveCount; redriven by AWS SQS)",
	}, []string{"route"}))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("Register = %v, want AlreadyRegisteredError", err)
	}
	middleware.DLQCounter(middleware.WithMetricsRegisterer(reg))("r")
	if got := testutil.ToFloat64(are.ExistingCollector.(*prometheus.CounterVec).WithLabelValues("r")); got != 1 {
		t.Fatalf("dlq count = %v, want 1", got)
	}
}

// OTel continues the incoming trace by default; WithLinkFromContext starts a
// new trace linked to it instead. The incoming span is the context's or the
// one the message's traceparent names.
func TestOTelParentOrLink(t *testing.T) {
	t.Parallel()
	const carried = "0af7651916cd43dd8448eb211c80319c"
	tests := []struct {
		name       string
		link       bool
		ctxParent  bool
		msg        middleware.Message
		wantParent bool
		wantLinks  int
	}{
		{name: "default continues the context's span", ctxParent: true, msg: messagingtest.NewMessage("m", nil), wantParent: true},
		{name: "default continues the message's trace", msg: messagingtest.NewMessage("m", map[string]string{"traceparent": "00-" + carried + "-b7ad6b7169203331-01"}), wantParent: true},
		{name: "link to the context's span", link: true, ctxParent: true, msg: messagingtest.NewMessage("m", nil), wantLinks: 1},
		{name: "link to the message's trace", link: true, msg: messagingtest.NewMessage("m", map[string]string{"traceparent": "00-" + carried + "-b7ad6b7169203331-01"}), wantLinks: 1},
		{name: "link without an incoming span is a bare root", link: true, msg: messagingtest.NewMessage("m", nil)},
		{name: "nil message", link: true, ctxParent: true, wantLinks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			ctx := context.Background()
			var parent trace.SpanContext
			if tt.ctxParent {
				var span trace.Span
				ctx, span = tp.Tracer("producer").Start(ctx, "send")
				parent = span.SpanContext()
				span.End()
			}
			opts := []middleware.OTelOption{middleware.WithTracerProvider(tp)}
			if tt.link {
				opts = append(opts, middleware.WithLinkFromContext())
			}
			if err := middleware.OTel("orders", opts...)(func(context.Context, middleware.Message) error { return nil })(ctx, tt.msg); err != nil {
				t.Fatal(err)
			}
			var got sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "loafer.process/orders" {
					got = s
				}
			}
			if got == nil {
				t.Fatalf("no processing span in %v", rec.Ended())
			}
			if got.Status().Code != codes.Ok {
				t.Errorf("status = %v, want Ok", got.Status().Code)
			}
			incoming := parent.TraceID().String()
			if !tt.ctxParent {
				incoming = carried
			}
			if got.Parent().IsValid() != tt.wantParent {
				t.Errorf("has parent = %v, want %v", got.Parent().IsValid(), tt.wantParent)
			}
			if tt.wantParent && got.SpanContext().TraceID().String() != incoming {
				t.Errorf("trace = %s, want the incoming %s", got.SpanContext().TraceID(), incoming)
			}
			if len(got.Links()) != tt.wantLinks {
				t.Fatalf("links = %v, want %d", got.Links(), tt.wantLinks)
			}
			if tt.wantLinks == 1 {
				if l := got.Links()[0].SpanContext.TraceID().String(); l != incoming {
					t.Errorf("link to trace %s, want %s", l, incoming)
				}
				if got.SpanContext().TraceID().String() == incoming {
					t.Error("linked span continued the incoming trace")
				}
			}
			_, hasID := attrOf(got.Attributes(), "messaging.message.id")
			if hasID != (tt.msg != nil) {
				t.Errorf("messaging.message.id present = %v, want %v", hasID, tt.msg != nil)
			}
			if v, _ := attrOf(got.Attributes(), "messaging.destination.name"); v != "orders" {
				t.Errorf("destination = %q, want the route name", v)
			}
		})
	}
}

func attrOf(attrs []attribute.KeyValue, key string) (string, bool) {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}
