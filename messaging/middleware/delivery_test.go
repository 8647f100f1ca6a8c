package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

// loaferDouble is a message double as a loafer-awsx 0.6.0 user writes one:
// exactly the methods of loafer-awsx's middleware.Message and nothing more.
// That it compiles as a middleware.Message is the first half of the test.
type loaferDouble struct {
	body   string
	attrs  map[string]string
	system map[string]string
}

var _ middleware.Message = (*loaferDouble)(nil)

func (m *loaferDouble) Decode(out any) error                     { return json.Unmarshal([]byte(m.body), out) }
func (m *loaferDouble) DecodeMessage(out any) error              { return json.Unmarshal([]byte(m.body), out) }
func (m *loaferDouble) Attribute(key string) string              { return m.attrs[key] }
func (m *loaferDouble) Attributes() map[string]string            { return m.attrs }
func (m *loaferDouble) UserMessageAttribute(key string) string   { return m.attrs[key] }
func (m *loaferDouble) UserMessageAttributes() map[string]string { return m.attrs }
func (m *loaferDouble) SystemAttributeByKey(key string) string   { return m.system[key] }
func (m *loaferDouble) SystemAttributes() map[string]string      { return m.system }
func (m *loaferDouble) Metadata() map[string]string              { return m.attrs }
func (m *loaferDouble) Identifier() string                       { return "receipt-1" }
func (m *loaferDouble) Body() []byte                             { return []byte(m.body) }
func (m *loaferDouble) Message() string                          { return m.body }
func (m *loaferDouble) TimeStamp() time.Time                     { return time.Unix(1700000000, 0) }

// loaferConsumerDouble adds the Backoff of loafer-awsx's consumer.Message.
type loaferConsumerDouble struct {
	loaferDouble
	backoff []time.Duration
}

func (m *loaferConsumerDouble) Backoff(d time.Duration) { m.backoff = append(m.backoff, d) }

// deliveryDouble answers every Delivery method with values that differ from
// its system attributes, so a function reading the attribute instead of the
// method is caught.
type deliveryDouble struct {
	loaferDouble
	backoff time.Duration
}

var _ middleware.Delivery = (*deliveryDouble)(nil)

func (m *deliveryDouble) ID() string              { return "id-from-method" }
func (m *deliveryDouble) GroupID() string         { return "group-from-method" }
func (m *deliveryDouble) ReceiveCount() int       { return 7 }
func (m *deliveryDouble) QueueName() string       { return "orders" }
func (m *deliveryDouble) Backoff(d time.Duration) { m.backoff = d }

func TestDeliveryIsNotRequired(t *testing.T) {
	t.Parallel()
	var m middleware.Message = &loaferDouble{}
	if _, ok := m.(middleware.Delivery); ok {
		t.Fatal("the loafer-style double implements Delivery: the test no longer checks what it means to")
	}
}

func TestDeliveryFunctionsFallBackToSystemAttributes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		system      map[string]string
		wantGroup   string
		wantReceive int
	}{
		{"fifo", map[string]string{"MessageGroupId": "g-1", "ApproximateReceiveCount": "4"}, "g-1", 4},
		{"standard", map[string]string{"ApproximateReceiveCount": "2"}, "", 2},
		// A message being handled was received at least once.
		{"no attributes", nil, "", 1},
		{"invalid count", map[string]string{"ApproximateReceiveCount": "many"}, "", 1},
		{"zero count", map[string]string{"ApproximateReceiveCount": "0"}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &loaferDouble{system: tt.system}
			if got := middleware.GroupID(m); got != tt.wantGroup {
				t.Errorf("GroupID = %q, want %q", got, tt.wantGroup)
			}
			if got := middleware.ReceiveCount(m); got != tt.wantReceive {
				t.Errorf("ReceiveCount = %d, want %d", got, tt.wantReceive)
			}
			if got := middleware.MessageID(m); got != "" {
				t.Errorf("MessageID = %q, want empty", got)
			}
			if got := middleware.QueueName(m); got != "" {
				t.Errorf("QueueName = %q, want empty", got)
			}
			if middleware.Backoff(m, time.Second) {
				t.Error("Backoff reported success on a message that cannot back off")
			}
		})
	}
}

func TestDeliveryFunctionsPreferMethods(t *testing.T) {
	t.Parallel()
	m := &deliveryDouble{loaferDouble: loaferDouble{system: map[string]string{
		"MessageGroupId": "group-from-attribute", "ApproximateReceiveCount": "2"}}}
	if got := middleware.MessageID(m); got != "id-from-method" {
		t.Errorf("MessageID = %q", got)
	}
	if got := middleware.GroupID(m); got != "group-from-method" {
		t.Errorf("GroupID = %q", got)
	}
	if got := middleware.ReceiveCount(m); got != 7 {
		t.Errorf("ReceiveCount = %d", got)
	}
	if got := middleware.QueueName(m); got != "orders" {
		t.Errorf("QueueName = %q", got)
	}
	if !middleware.Backoff(m, 3*time.Second) || m.backoff != 3*time.Second {
		t.Errorf("Backoff not passed on: %v", m.backoff)
	}
}

// A double written for loafer-awsx's consumer.Message has Backoff but none
// of the other Delivery methods; Backoff must still reach it.
func TestBackoffReachesLoaferConsumerDouble(t *testing.T) {
	t.Parallel()
	m := &loaferConsumerDouble{}
	if !middleware.Backoff(m, time.Minute) || len(m.backoff) != 1 || m.backoff[0] != time.Minute {
		t.Fatalf("Backoff = %v", m.backoff)
	}
}

func TestDeliveryFunctionsOnNil(t *testing.T) {
	t.Parallel()
	if middleware.MessageID(nil) != "" || middleware.GroupID(nil) != "" || middleware.QueueName(nil) != "" ||
		middleware.ReceiveCount(nil) != 0 || middleware.Backoff(nil, time.Second) {
		t.Fatal("nil message gave a value")
	}
}

func TestMessagingtestMessageIsDelivery(t *testing.T) {
	t.Parallel()
	m := messagingtest.NewMessage("x", nil)
	m.System["MessageGroupId"] = "g"
	if middleware.MessageID(m) != "test-message" || middleware.QueueName(m) != "test" || middleware.GroupID(m) != "g" {
		t.Fatalf("id %q queue %q group %q", middleware.MessageID(m), middleware.QueueName(m), middleware.GroupID(m))
	}
	if !middleware.Backoff(m, time.Second) || !m.BackoffSet || m.BackoffFor != time.Second {
		t.Fatal("Backoff not recorded")
	}
}

// A loafer-awsx test double goes through a route's whole chain as a
// loafer-awsx test drives it: Recovery, Logging, Metrics and OTel around a
// typed handler. Each middleware must read the double without the Delivery
// methods, from its system attributes where SQS has them.
func TestLoaferDoubleThroughRouteChain(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	type order struct {
		ID string `json:"id"`
	}
	var got []order
	handler := typed.WrapHandler(typed.JSONCodec[order]{}, func(_ context.Context, o order) error {
		if o.ID == "boom" {
			panic("handler bug")
		}
		got = append(got, o)
		return nil
	})
	route, err := router.New("orders", handler, router.WithMiddleware(
		middleware.Recovery(log),
		middleware.Logging(log),
		middleware.Metrics("orders", middleware.WithMetricsRegisterer(reg)),
		middleware.OTel("orders", middleware.WithTracerProvider(tp)),
	))
	if err != nil {
		t.Fatal(err)
	}
	h := middleware.Chain(route.Middlewares()...)(route.Handler())
	system := map[string]string{"ApproximateReceiveCount": "3", "MessageGroupId": "g"}

	if err := h(context.Background(), &loaferDouble{body: `{"id":"o-1"}`, system: system}); err != nil {
		t.Fatalf("handler: %v", err)
	}
	if len(got) != 1 || got[0].ID != "o-1" {
		t.Fatalf("handled %v", got)
	}
	if err := h(context.Background(), &loaferDouble{body: `{"id":"boom"}`, system: system}); !errors.Is(err, merrors.ErrPanic) {
		t.Fatalf("panic: err = %v, want ErrPanic", err)
	}
	// A body that does not decode is fatal.
	err = h(context.Background(), &loaferDouble{body: `not json`, system: system})
	if class, _ := merrors.Classify(err); class != merrors.FatalClass {
		t.Fatalf("decode: err = %v, class %v, want fatal", err, class)
	}

	if n := sum(t, reg, middleware.MetricReceived); n != 3 {
		t.Errorf("received = %v, want 3", n)
	}
	if !strings.Contains(logs.String(), `"msg":"message processed"`) || !strings.Contains(logs.String(), `"msg":"panic recovered"`) {
		t.Errorf("logs miss the outcomes:\n%s", logs.String())
	}
	ended := spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans, want 3", len(ended))
	}
	for _, s := range ended {
		if v := attr(s.Attributes(), "messaging.aws.sqs.receive_count"); v != "3" {
			t.Errorf("span receive_count = %q, want 3 (from ApproximateReceiveCount)", v)
		}
	}
}

func sum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func attr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
