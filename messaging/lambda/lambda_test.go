package lambda_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"go.uber.org/goleak"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func rec(queue, id, body, group string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: "arn:aws:sqs:us-east-1:0:" + queue,
		Attributes: map[string]string{"MessageGroupId": group, "ApproximateReceiveCount": "1"}}
}

func failures(r events.SQSEventResponse) []string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

type order struct {
	OK bool `json:"ok"`
}

func TestPartialBatchFailures(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	var observed []string
	std, _ := router.New("std", typed.WrapHandler(typed.JSONCodec[order]{}, func(_ context.Context, o order) error {
		if !o.OK {
			return errors.New("no")
		}
		return nil
	}), router.WithDLQ(5, router.WithOnDLQ(func(_ context.Context, m middleware.Message) {
		mu.Lock()
		observed = append(observed, middleware.MessageID(m))
		mu.Unlock()
	})))
	fifo, _ := router.New("ord.fifo", func(_ context.Context, m middleware.Message) error {
		mu.Lock()
		seen = append(seen, middleware.MessageID(m))
		mu.Unlock()
		if middleware.MessageID(m) == "f2" {
			return errors.New("fail")
		}
		return nil
	})
	var global int
	h, err := lambda.New([]*router.Route{std, fifo}, lambda.WithMiddleware(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, m middleware.Message) error {
			mu.Lock()
			global++
			mu.Unlock()
			return next(ctx, m)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		rec("std", "s1", `{"ok":true}`, ""), rec("std", "s2", `{"ok":false}`, ""), rec("std", "s3", `not json`, ""),
		rec("ord.fifo", "f1", "a", "g"), rec("ord.fifo", "f2", "b", "g"), rec("ord.fifo", "f3", "c", "g"),
		rec("unknown", "u1", "x", ""),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := failures(resp), []string{"f2", "f3", "s2", "s3", "u1"}; !slices.Equal(got, want) {
		t.Fatalf("failures %v want %v", got, want)
	}
	if !slices.Equal(seen, []string{"f1", "f2"}) {
		t.Fatalf("fifo ran %v: f3 must not run after f2 failed", seen)
	}
	// The decode failure is fatal, so the DLQ observer sees it at once.
	if !slices.Equal(observed, []string{"s3"}) || global != 5 {
		t.Fatalf("observed %v global %d", observed, global)
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	if _, err := lambda.New(nil); !errors.Is(err, merrors.ErrNoRoute) {
		t.Fatal(err)
	}
	r, _ := router.New("q", func(context.Context, middleware.Message) error { return nil })
	if _, err := lambda.New([]*router.Route{r, r}); !errors.Is(err, merrors.ErrInvalidOption) {
		t.Fatal(err)
	}
}

// A Scheduled Retry route works under Lambda: a failed FIFO record gets its
// retry schedule and counts as handled, so Lambda deletes it and the group's
// next record runs; with the retries used up it goes to the DLQ.
func TestScheduledRetryRoute(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	_, arn := fake.AddQueue("orders.fifo")
	dlq, _ := fake.AddQueue("orders-dlq.fifo")
	sched := messagingtest.NewScheduler(fake)
	var mu sync.Mutex
	var ran []string
	r, err := router.New("orders.fifo", func(_ context.Context, m middleware.Message) error {
		mu.Lock()
		ran = append(ran, string(m.Body()))
		mu.Unlock()
		if string(m.Body()) == "bad" {
			return errors.New("transient")
		}
		return nil
	}, router.WithScheduledRetry(router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/s"),
		router.WithScheduledDLQ(dlq), router.WithMaxRetryCount(1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lambda.New([]*router.Route{r}); !errors.Is(err, merrors.ErrNoSchedulerClient) {
		t.Fatalf("New without scheduler: %v", err)
	}
	if _, err := lambda.New([]*router.Route{r}, lambda.WithSchedulerClient(sched)); !errors.Is(err, merrors.ErrNoSQSClient) {
		t.Fatalf("New without SQS client: %v", err)
	}
	var retries, dead int
	h, err := lambda.New([]*router.Route{r}, lambda.WithSchedulerClient(sched), lambda.WithSQSClient(fake),
		lambda.WithRetryMetric(func(string) { retries++ }), lambda.WithDeadLetterMetric(func(string) { dead++ }))
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		rec("orders.fifo", "m1", "bad", "g"), rec("orders.fifo", "m2", "good", "g"),
	}})
	if len(resp.BatchItemFailures) != 0 || retries != 1 || len(sched.Schedules()) != 1 {
		t.Fatalf("failures %v, retries %d, schedules %d", failures(resp), retries, len(sched.Schedules()))
	}
	mu.Lock()
	if !slices.Equal(ran, []string{"bad", "good"}) {
		t.Fatalf("ran %v: the group stayed blocked", ran)
	}
	mu.Unlock()
	// The retry (retry_count 1) fails again: MaxRetryCount 1 sends it to the DLQ.
	again := rec("orders.fifo", "m3", "bad", "g")
	again.MessageAttributes = map[string]events.SQSMessageAttribute{"retry_count": {DataType: "Number", StringValue: aws.String("1")}}
	resp, _ = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{again}})
	if len(resp.BatchItemFailures) != 0 || dead != 1 || fake.Len(dlq) != 1 {
		t.Fatalf("failures %v, dead %d, dlq %d", failures(resp), dead, fake.Len(dlq))
	}
	// A failed schedule reports the record as failed.
	sched.Err = errors.New("throttled")
	resp, _ = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec("orders.fifo", "m4", "bad", "g")}})
	if got := failures(resp); !slices.Equal(got, []string{"m4"}) {
		t.Fatalf("failures %v", got)
	}
}
