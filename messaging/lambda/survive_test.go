package lambda_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// syncBuffer is a log sink safe for the handler goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLog() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewJSONHandler(&b, nil)), &b
}

// handle calls Handle and turns a panic escaping it into a test failure.
func handle(t *testing.T, h *lambda.Handler, ctx context.Context, recs ...events.SQSMessage) (resp events.SQSEventResponse) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic escaped Handle: %v", p)
		}
	}()
	resp, err := h.Handle(ctx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A panicking handler without Recovery on the route fails only its record,
// and on a FIFO queue the rest of its message group; every other record
// still runs and is deleted. The panic is logged at Error with its stack.
func TestPanicFailsOnlyItsRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, queue string
		recs        []events.SQSMessage
		opts        []router.Option
		wantFail    []string
		wantRan     []string
	}{
		{name: "standard", queue: "std-panic",
			recs: []events.SQSMessage{rec("std-panic", "s1", "ok", ""), rec("std-panic", "s2", "boom", ""),
				rec("std-panic", "s3", "ok", "")},
			wantFail: []string{"s2"}, wantRan: []string{"s1", "s2", "s3"}},
		{name: "fifo", queue: "fifo-panic.fifo",
			recs: []events.SQSMessage{rec("fifo-panic.fifo", "f1", "ok", "g1"), rec("fifo-panic.fifo", "f2", "boom", "g1"),
				rec("fifo-panic.fifo", "f3", "ok", "g1"), rec("fifo-panic.fifo", "h1", "ok", "g2")},
			wantFail: []string{"f2", "f3"}, wantRan: []string{"f1", "f2", "h1"}},
		{name: "dlq observer panics", queue: "dlq-panic",
			recs: []events.SQSMessage{rec("dlq-panic", "d1", "fatal", ""), rec("dlq-panic", "d2", "ok", "")},
			opts: []router.Option{router.WithDLQ(1, router.WithOnDLQ(func(context.Context, middleware.Message) {
				panic("observer bug")
			}))},
			wantFail: []string{"d1"}, wantRan: []string{"d1", "d2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var ran []string
			r, err := router.New(tc.queue, func(_ context.Context, m middleware.Message) error {
				mu.Lock()
				ran = append(ran, middleware.MessageID(m))
				mu.Unlock()
				switch string(m.Body()) {
				case "boom":
					panic("handler bug")
				case "fatal":
					return merrors.Fatal(errors.New("poison"))
				}
				return nil
			}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			log, logs := newLog()
			h, err := lambda.New([]*router.Route{r}, lambda.WithLogger(log))
			if err != nil {
				t.Fatal(err)
			}
			resp := handle(t, h, context.Background(), tc.recs...)
			if got := failures(resp); !slices.Equal(got, tc.wantFail) {
				t.Fatalf("failures %v, want %v", got, tc.wantFail)
			}
			mu.Lock()
			slices.Sort(ran)
			if !slices.Equal(ran, tc.wantRan) {
				t.Fatalf("ran %v, want %v", ran, tc.wantRan)
			}
			mu.Unlock()
			out := logs.String()
			if !strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, `"stack":"goroutine`) ||
				!strings.Contains(out, "bug") {
				t.Fatalf("panic not logged at Error with its stack:\n%s", out)
			}
		})
	}
}

// A panic is handled like any other failure: on a Scheduled Retry route it
// schedules a retry, so the record counts as handled and its group moves on.
func TestPanicScheduledRetry(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	_, arn := fake.AddQueue("panics.fifo")
	dlq, _ := fake.AddQueue("panics-dlq.fifo")
	sched := messagingtest.NewScheduler(fake)
	r, err := router.New("panics.fifo", func(_ context.Context, m middleware.Message) error {
		if string(m.Body()) == "boom" {
			panic("handler bug")
		}
		return nil
	}, router.WithScheduledRetry(router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/s"),
		router.WithScheduledDLQ(dlq), router.WithMaxRetryCount(3)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambda.New([]*router.Route{r}, lambda.WithSchedulerClient(sched), lambda.WithSQSClient(fake))
	if err != nil {
		t.Fatal(err)
	}
	resp := handle(t, h, context.Background(), rec("panics.fifo", "p1", "boom", "g"), rec("panics.fifo", "p2", "ok", "g"))
	if len(resp.BatchItemFailures) != 0 || len(sched.Schedules()) != 1 {
		t.Fatalf("failures %v, schedules %d: the panic was not retried like an error", failures(resp), len(sched.Schedules()))
	}
}
