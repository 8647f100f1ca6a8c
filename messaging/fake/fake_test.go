package fake_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/fake"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMessageZeroValue(t *testing.T) {
	t.Parallel()
	var m fake.Message
	for name, got := range map[string]map[string]string{
		"Attributes": m.Attributes(), "UserMessageAttributes": m.UserMessageAttributes(),
		"SystemAttributes": m.SystemAttributes(), "Metadata": m.Metadata(),
	} {
		if got == nil || len(got) != 0 {
			t.Errorf("%s() = %#v, want an empty non-nil map", name, got)
		}
	}
	if m.Body() != nil || m.Identifier() != "" || m.Message() != "" || !m.TimeStamp().IsZero() || m.BackedOff() || m.DispatchCount() != 0 {
		t.Fatal("zero Message returned a non-zero value")
	}
}

func TestMessageAccessors(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	m := &fake.Message{
		TimeStampValue: at, BodyData: []byte(`{"n":1}`), MessageValue: `{"n":2}`, IdentifierValue: "rh-1",
		AttributeValues:            map[string]string{"a": "1"},
		UserMessageAttributeValues: map[string]string{"u": "2"},
		SystemAttributeValues:      map[string]string{"MessageGroupId": "g"},
		MetadataValues:             map[string]string{"m": "3"},
	}
	tests := []struct{ name, got, want string }{
		{"Attribute", m.Attribute("a"), "1"},
		{"Attribute absent", m.Attribute("x"), ""},
		{"UserMessageAttribute", m.UserMessageAttribute("u"), "2"},
		{"SystemAttributeByKey", m.SystemAttributeByKey("MessageGroupId"), "g"},
		{"Metadata", m.Metadata()["m"], "3"},
		{"Identifier", m.Identifier(), "rh-1"},
		{"Message", m.Message(), `{"n":2}`},
		{"Body", string(m.Body()), `{"n":1}`},
		{"GroupID through middleware", middleware.GroupID(m), "g"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if !m.TimeStamp().Equal(at) {
		t.Errorf("TimeStamp = %v", m.TimeStamp())
	}
	// The maps handed out are copies: changing one leaves the message alone.
	m.Attributes()["a"] = "changed"
	m.SystemAttributes()["MessageGroupId"] = "changed"
	if m.Attribute("a") != "1" || m.SystemAttributeByKey("MessageGroupId") != "g" {
		t.Fatal("a returned map aliases the message's fields")
	}
	var body, inner struct{ N int }
	if err := m.Decode(&body); err != nil || body.N != 1 {
		t.Fatalf("Decode = %v, %+v", err, body)
	}
	if err := m.DecodeMessage(&inner); err != nil || inner.N != 2 {
		t.Fatalf("DecodeMessage = %v, %+v", err, inner)
	}
}

func TestMessageDecodeFuncs(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	m := &fake.Message{BodyData: []byte(`{}`), DecodeFunc: func(any) error { return boom },
		DecodeMessageFunc: func(any) error { return boom }}
	if err := m.Decode(&struct{}{}); !errors.Is(err, boom) {
		t.Fatalf("Decode = %v, want DecodeFunc's error", err)
	}
	if err := m.DecodeMessage(&struct{}{}); !errors.Is(err, boom) {
		t.Fatalf("DecodeMessage = %v, want DecodeMessageFunc's error", err)
	}
	if err := (&fake.Message{BodyData: []byte("{")}).Decode(&struct{}{}); err == nil {
		t.Fatal("Decode of invalid JSON returned nil")
	}
}

func TestMessageRecordsDispatchAndBackoff(t *testing.T) {
	t.Parallel()
	if !(&fake.Message{BackedOffValue: true}).BackedOff() {
		t.Fatal("BackedOffValue is not reported before Backoff")
	}
	m := &fake.Message{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Dispatch()
			m.Backoff(time.Duration(i) * time.Second)
		}()
	}
	wg.Wait()
	if got := m.DispatchCount(); got != 50 {
		t.Fatalf("DispatchCount = %d, want 50", got)
	}
	if got := len(m.BackoffDelays()); got != 50 || !m.BackedOff() {
		t.Fatalf("BackoffDelays has %d entries (BackedOff %v), want 50", got, m.BackedOff())
	}
	middleware.Backoff(m, 7*time.Second)
	if d := m.BackoffDelays(); d[len(d)-1] != 7*time.Second {
		t.Fatalf("middleware.Backoff did not reach the message: %v", d[len(d)-1])
	}
}

func TestClientsRecordAndDelegate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("boom")

	var q fake.SQSClient
	if out, err := q.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: aws.String("a")}); out != nil || err != nil {
		t.Fatalf("unset SendMessageFunc answered %v, %v", out, err)
	}
	q.SendMessageFunc = func(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
		return nil, boom
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{MessageBody: aws.String("b")}); !errors.Is(err, boom) {
		t.Fatalf("SendMessage = %v, want SendMessageFunc's error", err)
	}
	_, _ = q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	_, _ = q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{})
	_, _ = q.DeleteMessage(ctx, &sqs.DeleteMessageInput{})
	_, _ = q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
	sent := q.SendMessageCalls()
	if len(sent) != 2 || *sent[0].MessageBody != "a" || *sent[1].MessageBody != "b" {
		t.Fatalf("SendMessageCalls = %v", sent)
	}
	if len(q.GetQueueURLCalls()) != 1 || len(q.ChangeMessageVisibilityCalls()) != 1 ||
		len(q.DeleteMessageCalls()) != 1 || len(q.ReceiveMessageCalls()) != 1 {
		t.Fatal("a call was not recorded")
	}

	var n fake.SNSClient
	n.PublishBatchFunc = func(context.Context, *sns.PublishBatchInput, ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
		return &sns.PublishBatchOutput{}, nil
	}
	if out, err := n.PublishBatch(ctx, &sns.PublishBatchInput{}); out == nil || err != nil {
		t.Fatalf("PublishBatch = %v, %v", out, err)
	}
	_, _ = n.Publish(ctx, &sns.PublishInput{Message: aws.String("m")})
	if len(n.PublishCalls()) != 1 || len(n.PublishBatchCalls()) != 1 {
		t.Fatal("an SNS call was not recorded")
	}

	var s fake.SchedulerClient
	_, _ = s.CreateSchedule(ctx, &scheduler.CreateScheduleInput{Name: aws.String("r")})
	if c := s.CreateScheduleCalls(); len(c) != 1 || *c[0].Name != "r" {
		t.Fatalf("CreateScheduleCalls = %v", c)
	}
	// The slices handed out are copies.
	s.CreateScheduleCalls()[0] = nil
	if s.CreateScheduleCalls()[0] == nil {
		t.Fatal("CreateScheduleCalls aliases the recorded calls")
	}
}

// TestSQSClientDrivesConsumer runs a real consumer on the fake: one message is
// received, handled and deleted with its receipt handle, by DeleteMessage, or
// by DeleteMessageBatch on a router.WithDeleteBatch route.
func TestSQSClientDrivesConsumer(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("delete batch %v", batch), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			q := &fake.SQSClient{
				GetQueueUrlFunc: func(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
					return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs.test/000000000000/" + *in.QueueName)}, nil
				},
				ReceiveMessageFunc: func(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
					out := &sqs.ReceiveMessageOutput{}
					once.Do(func() {
						out.Messages = []types.Message{{MessageId: aws.String("m-1"), ReceiptHandle: aws.String("rh-1"), Body: aws.String(`{"id":1}`)}}
					})
					if len(out.Messages) == 0 {
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return out, nil
				},
				DeleteMessageFunc: func(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
					cancel()
					return &sqs.DeleteMessageOutput{}, nil
				},
				// No DeleteMessageBatchFunc: a nil output and nil error mean
				// every entry was deleted.
			}
			opts := []router.Option{router.WithWaitTimeSeconds(0)}
			if batch {
				opts = append(opts, router.WithDeleteBatch())
			}
			handled := make(chan string, 1)
			route, err := router.New("orders", func(_ context.Context, m middleware.Message) error {
				handled <- string(m.Body())
				if batch {
					cancel() // the final flush deletes it
				}
				return nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			c, err := consumer.New(q, route)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v", err)
			}
			if got := <-handled; got != `{"id":1}` {
				t.Fatalf("handled %q", got)
			}
			url := "https://sqs.test/000000000000/orders"
			del, batches := q.DeleteMessageCalls(), q.DeleteMessageBatchCalls()
			if !batch {
				if len(del) != 1 || len(batches) != 0 || *del[0].ReceiptHandle != "rh-1" || *del[0].QueueUrl != url {
					t.Fatalf("DeleteMessageCalls = %+v, DeleteMessageBatchCalls = %+v", del, batches)
				}
				return
			}
			if len(del) != 0 || len(batches) != 1 || len(batches[0].Entries) != 1 ||
				*batches[0].Entries[0].ReceiptHandle != "rh-1" || *batches[0].QueueUrl != url {
				t.Fatalf("DeleteMessageCalls = %+v, DeleteMessageBatchCalls = %+v", del, batches)
			}
		})
	}
}

func TestLogHandler(t *testing.T) {
	t.Parallel()
	h := fake.NewLogHandler()
	log := slog.New(h).With("route", "orders").WithGroup("msg").With("id", "m-1")
	log.Debug("received", slog.Group("size", slog.Int("bytes", 12)), slog.Group("", slog.String("inline", "x")),
		slog.Group("empty"), slog.Any("lazy", lazy("v")))
	slog.New(h.SetLevel(slog.LevelWarn)).Info("dropped")
	slog.New(h).Warn("kept", "n", 3)

	recs := h.Records()
	if len(recs) != 2 {
		t.Fatalf("captured %d records, want 2: %+v", len(recs), recs)
	}
	want := map[string]any{"route": "orders", "msg.id": "m-1", "msg.size.bytes": int64(12), "msg.inline": "x", "msg.lazy": "v"}
	if len(recs[0].Attrs) != len(want) {
		t.Fatalf("attrs = %v, want %v", recs[0].Attrs, want)
	}
	for k, v := range want {
		if recs[0].Attrs[k] != v {
			t.Errorf("attr %q = %#v, want %#v", k, recs[0].Attrs[k], v)
		}
	}
	if recs[0].Level != slog.LevelDebug || recs[0].Message != "received" || recs[0].Time.IsZero() {
		t.Errorf("record 0 = %+v", recs[0])
	}
	if recs[1].Message != "kept" || recs[1].Attrs["n"] != int64(3) {
		t.Errorf("record 1 = %+v", recs[1])
	}
	if h.WithGroup("") != slog.Handler(h) || h.WithAttrs(nil) != slog.Handler(h) {
		t.Error("an empty group or no attributes did not return the handler itself")
	}
	h.Reset()
	if len(h.Records()) != 0 {
		t.Fatal("Reset kept records")
	}
}

type lazy string

func (l lazy) LogValue() slog.Value { return slog.StringValue(string(l)) }
