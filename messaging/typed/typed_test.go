package typed_test

import (
	"context"
	"errors"
	"testing"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/typed"
)

type order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("orders.fifo")
	s := messagingtest.NewSNS(fake)
	s.Subscribe("arn:aws:sns:us-east-1:0:orders.fifo", url)
	p, _ := producer.New(s)
	tp := typed.NewProducer(p, typed.JSONCodec[order]{})
	if _, err := tp.Publish(ctx, "arn:aws:sns:us-east-1:0:orders.fifo", order{ID: "o1", Total: 3},
		typed.WithGroupID("g"), typed.WithDeduplicationID("d"), typed.WithAttributes(map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	var got order
	h := typed.WrapHandler(typed.JSONCodec[order]{}, func(_ context.Context, o order) error { got = o; return nil })
	body := fake.Bodies(url)[0]
	if err := h(ctx, messagingtest.NewMessage(body, nil)); err != nil || got != (order{"o1", 3}) {
		t.Fatalf("got %+v %v", got, err)
	}
	err := h(ctx, messagingtest.NewMessage("{not json", nil))
	if c, _ := merrors.Classify(err); c != merrors.FatalClass {
		t.Fatalf("decode error class %v (%v)", c, err)
	}
	var fe *merrors.FatalError
	if !errors.As(err, &fe) {
		t.Fatal("not fatal")
	}
}

// A typed handler on a queue subscribed without raw delivery decodes the
// published message, not the SNS envelope around it.
func TestWrapHandlerUnwrapsEnvelope(t *testing.T) {
	t.Parallel()
	env := `{"Type":"Notification","MessageId":"n1","TopicArn":"arn:aws:sns:us-east-1:0:orders",` +
		`"Message":"{\"id\":\"o7\",\"total\":9}","Timestamp":"2026-03-01T12:00:00.000Z"}`
	var got order
	h := typed.WrapHandler(typed.JSONCodec[order]{}, func(_ context.Context, o order) error { got = o; return nil })
	if err := h(context.Background(), messagingtest.NewMessage(env, nil)); err != nil || got != (order{ID: "o7", Total: 9}) {
		t.Fatalf("got %+v, %v", got, err)
	}
}
