package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// runUntil runs c until cond holds (checked every 5ms), then cancels and
// waits for Run to return.
func runUntil(t *testing.T, c *consumer.Consumer, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case err := <-errc:
			cancel()
			t.Fatalf("Run returned early: %v", err)
		case <-deadline:
			cancel()
			<-errc
			t.Fatal("condition not reached")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func newRoute(t *testing.T, name string, h middleware.Handler, opts ...router.Option) *router.Route {
	t.Helper()
	r, err := router.New(name, h, append([]router.Option{router.WithWaitTimeSeconds(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	r := newRoute(t, "q", func(context.Context, middleware.Message) error { return nil })
	if _, err := consumer.New(nil, r); !errors.Is(err, merrors.ErrNoSQSClient) {
		t.Fatalf("nil client: %v", err)
	}
	if _, err := consumer.New(messagingtest.NewSQS(), nil); !errors.Is(err, merrors.ErrNoRoute) {
		t.Fatalf("nil route: %v", err)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		c, err := consumer.New(messagingtest.NewSQS(), r, consumer.WithRetryTimeout(d))
		if !errors.Is(err, merrors.ErrInvalidOption) || c != nil || !strings.Contains(err.Error(), d.String()) {
			t.Errorf("WithRetryTimeout(%v): consumer %v, error %v; want nil and ErrInvalidOption naming the value", d, c, err)
		}
	}
	if _, err := consumer.New(messagingtest.NewSQS(), r, consumer.WithRetryTimeout(time.Millisecond)); err != nil {
		t.Fatalf("WithRetryTimeout(1ms): %v", err)
	}
}

func TestQueueResolveError(t *testing.T) {
	t.Parallel()
	c, err := consumer.New(messagingtest.NewSQS(), newRoute(t, "missing", func(context.Context, middleware.Message) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); !errors.Is(err, merrors.ErrQueueResolve) {
		t.Fatalf("Run = %v, want ErrQueueResolve", err)
	}
}

// TestBatchedAcknowledgement proves the steady state costs at most 0.25 API
// calls per message: one receive of 10 plus one batch delete of 10.
func TestBatchedAcknowledgement(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"std", "ordered.fifo"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fake := messagingtest.NewSQS()
			url, _ := fake.AddQueue(name)
			const n = 2000
			for i := range n {
				if _, err := fake.Send(url, fmt.Sprint("m", i), fmt.Sprint("g", i%50), nil); err != nil {
					t.Fatal(err)
				}
			}
			var handled atomic.Int64
			mode := router.Parallel
			if name != "std" {
				mode = router.PerGroupID
			}
			r := newRoute(t, name, func(context.Context, middleware.Message) error { handled.Add(1); return nil },
				router.WithWorkerPoolSize(8), router.WithRunMode(mode), router.WithDeleteBatch())
			c, err := consumer.New(fake, r)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, c, func() bool { return fake.Len(url) == 0 })
			if handled.Load() != n {
				t.Fatalf("handled %d want %d", handled.Load(), n)
			}
			calls := fake.Calls("ReceiveMessage") + fake.Calls("DeleteMessageBatch") +
				fake.Calls("ChangeMessageVisibilityBatch") + fake.Calls("DeleteMessage")
			perMsg := float64(calls) / n
			t.Logf("%d calls for %d messages: %.3f/message (receive %d, delete batch %d)",
				calls, n, perMsg, fake.Calls("ReceiveMessage"), fake.Calls("DeleteMessageBatch"))
			if perMsg > 0.25 {
				t.Fatalf("%.3f API calls per message, want <= 0.25", perMsg)
			}
		})
	}
}

// failingReceive fails the first ReceiveMessage calls.
type failingReceive struct {
	*messagingtest.SQS
	failures atomic.Int64
}

func (f *failingReceive) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, errors.New("throttled")
	}
	return f.SQS.ReceiveMessage(ctx, in, opts...)
}

func TestReceiveErrorsAreRetried(t *testing.T) {
	t.Parallel()
	fake := &failingReceive{SQS: messagingtest.NewSQS()}
	fake.failures.Store(3)
	url, _ := fake.AddQueue("flaky-receive")
	if _, err := fake.Send(url, "x", "", nil); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	c, err := consumer.New(fake, newRoute(t, "flaky-receive", func(context.Context, middleware.Message) error { handled.Add(1); return nil }),
		consumer.WithRetryTimeout(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return handled.Load() == 1 && fake.Len(url) == 0 })
}

// loaferWrapper is a custom client wrapper written against loafer-awsx's
// five-method SQSClient: it has no batch methods.
type loaferWrapper struct {
	consumer.SQSClient
	deletes atomic.Int64
}

func (w *loaferWrapper) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	w.deletes.Add(1)
	return w.SQSClient.DeleteMessage(ctx, in, opts...)
}

func TestSeedClientWrapperWithoutBatchMethods(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("wrapped")
	sendN(t, fake, url, 15, nil)
	w := &loaferWrapper{SQSClient: fake}
	c, err := consumer.New(w, newRoute(t, "wrapped", func(context.Context, middleware.Message) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return fake.Len(url) == 0 })
	if w.deletes.Load() != 15 || fake.Calls("DeleteMessageBatch") != 0 {
		t.Fatalf("DeleteMessage %d, DeleteMessageBatch %d", w.deletes.Load(), fake.Calls("DeleteMessageBatch"))
	}
}

// Batching deletes is the route's choice, as in loafer-awsx: without
// WithDeleteBatch a batch-capable client gets one DeleteMessage per message,
// and with it a client without DeleteMessageBatch is refused before any SQS
// call.
func TestDeleteBatchIsTheRoutesChoice(t *testing.T) {
	t.Parallel()
	t.Run("without WithDeleteBatch", func(t *testing.T) {
		t.Parallel()
		q := messagingtest.NewSQS()
		url, _ := q.AddQueue("one-by-one")
		sendN(t, q, url, 15, nil)
		c, err := consumer.New(q, newRoute(t, "one-by-one", func(context.Context, middleware.Message) error { return nil }))
		if err != nil {
			t.Fatal(err)
		}
		runUntil(t, c, func() bool { return q.Len(url) == 0 })
		if q.Calls("DeleteMessage") != 15 || q.Calls("DeleteMessageBatch") != 0 {
			t.Fatalf("DeleteMessage %d, DeleteMessageBatch %d; want 15, 0", q.Calls("DeleteMessage"), q.Calls("DeleteMessageBatch"))
		}
	})
	t.Run("client without DeleteMessageBatch", func(t *testing.T) {
		t.Parallel()
		q := messagingtest.NewSQS()
		w := &loaferWrapper{SQSClient: q}
		c, err := consumer.New(w, newRoute(t, "refused", func(context.Context, middleware.Message) error { return nil }, router.WithDeleteBatch()))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Run(context.Background())
		if !errors.Is(err, merrors.ErrDeleteBatchUnsupported) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("Run = %v, want ErrDeleteBatchUnsupported naming the route", err)
		}
		if n := q.Calls("GetQueueUrl") + q.Calls("ReceiveMessage"); n != 0 {
			t.Fatalf("%d SQS calls before refusing", n)
		}
	})
}
