package messagingtest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Harness adapts one SQS implementation (the in-memory fake, an emulator,
// real SQS) to RunConsumerSuite.
type Harness struct {
	// Client is the SQS client under test.
	Client consumer.SQSClient
	// NewQueue creates an empty queue (FIFO when fifo) for one test and
	// returns its URL; the URL of a FIFO queue ends in ".fifo".
	NewQueue func(t *testing.T, fifo bool) (url string)
	// Len returns the number of messages in the queue, visible or not.
	Len func(t *testing.T, url string) int
}

// RunConsumerSuite is the conformance suite every SQS implementation must
// pass with the consumer and broker: delivery and deletion, per-group order
// through a failure, redelivery of failures, deletion of finished messages on
// shutdown, and a broker running standard and FIFO routes together.
func RunConsumerSuite(t *testing.T, h Harness) {
	t.Run("DeliversAndDeletes", func(t *testing.T) { t.Parallel(); suiteDelivers(t, h) })
	t.Run("FIFOOrderThroughFailure", func(t *testing.T) { t.Parallel(); suiteFIFO(t, h) })
	t.Run("RetriesFailure", func(t *testing.T) { t.Parallel(); suiteRetry(t, h) })
	t.Run("ShutdownFlushes", func(t *testing.T) { t.Parallel(); suiteShutdown(t, h) })
	t.Run("BrokerRunsEveryRoute", func(t *testing.T) { t.Parallel(); suiteBroker(t, h) })
}

func suiteBroker(t *testing.T, h Harness) {
	std, fifo := h.NewQueue(t, false), h.NewQueue(t, true)
	send(t, h, std, "std-1", "")
	send(t, h, fifo, "fifo-1", "g")
	var rec recorder
	handler := func(_ context.Context, m middleware.Message) error { rec.add(string(m.Body())); return nil }
	b, err := broker.New(h.Client, []*router.Route{route(t, std, handler), route(t, fifo, handler, router.WithRunMode(router.PerGroupID))},
		broker.WithLogger(slog.New(slog.DiscardHandler)), broker.WithShutdownTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for rec.len() < 2 || h.Len(t, std)+h.Len(t, fifo) != 0 {
		if time.Now().After(deadline) {
			cancel()
			<-errc
			t.Fatalf("broker handled %v", rec.list())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func send(t *testing.T, h Harness, url, body, group string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	if strings.HasSuffix(url, ".fifo") {
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(body)
	}
	if _, err := h.Client.SendMessage(context.Background(), in); err != nil {
		t.Fatalf("send %s: %v", body, err)
	}
}

// run runs a consumer for route until cond holds, then stops it.
func run(t *testing.T, h Harness, r *router.Route, cond func() bool, opts ...consumer.Option) {
	t.Helper()
	c, err := consumer.New(h.Client, r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		select {
		case err := <-errc:
			cancel()
			t.Fatalf("Run returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-errc
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) { r.mu.Lock(); r.seen = append(r.seen, s); r.mu.Unlock() }
func (r *recorder) len() int     { r.mu.Lock(); defer r.mu.Unlock(); return len(r.seen) }
func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func route(t *testing.T, url string, h middleware.Handler, opts ...router.Option) *router.Route {
	t.Helper()
	r, err := router.New(url, h, append([]router.Option{router.WithWaitTimeSeconds(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func suiteDelivers(t *testing.T, h Harness) {
	url := h.NewQueue(t, false)
	const n = 35
	for i := range n {
		send(t, h, url, fmt.Sprint("m", i), "")
	}
	var rec recorder
	r := route(t, url, func(_ context.Context, m middleware.Message) error { rec.add(string(m.Body())); return nil },
		router.WithWorkerPoolSize(4))
	run(t, h, r, func() bool { return rec.len() >= n && h.Len(t, url) == 0 })
	got := rec.list()
	slices.Sort(got)
	if len(slices.Compact(got)) != n {
		t.Fatalf("handled %d distinct messages, want %d", len(got), n)
	}
}

func suiteFIFO(t *testing.T, h Harness) {
	url := h.NewQueue(t, true)
	for i := range 4 {
		for _, g := range []string{"a", "b", "c"} {
			send(t, h, url, fmt.Sprint(g, i), g)
		}
	}
	var rec recorder
	var once sync.Once
	r := route(t, url, func(_ context.Context, m middleware.Message) error {
		body := string(m.Body())
		rec.add(body)
		fail := false
		if body == "a0" {
			once.Do(func() { fail = true })
		}
		if fail {
			if !middleware.Backoff(m, 0) {
				t.Error("the consumer's message does not accept Backoff")
			}
			return fmt.Errorf("first attempt of a0 fails")
		}
		return nil
	}, router.WithRunMode(router.PerGroupID), router.WithWorkerPoolSize(3))
	run(t, h, r, func() bool { return h.Len(t, url) == 0 })
	per := map[string][]string{}
	for _, b := range rec.list() {
		per[b[:1]] = append(per[b[:1]], b)
	}
	want := map[string][]string{
		"a": {"a0", "a0", "a1", "a2", "a3"},
		"b": {"b0", "b1", "b2", "b3"},
		"c": {"c0", "c1", "c2", "c3"},
	}
	for g, w := range want {
		if !slices.Equal(per[g], w) {
			t.Errorf("group %s ran %v, want %v", g, per[g], w)
		}
	}
}

func suiteRetry(t *testing.T, h Harness) {
	url := h.NewQueue(t, false)
	send(t, h, url, "flaky", "")
	var rec recorder
	r := route(t, url, func(_ context.Context, m middleware.Message) error {
		n := middleware.ReceiveCount(m)
		rec.add(fmt.Sprint(n))
		if n < 3 {
			if !middleware.Backoff(m, 0) {
				t.Error("the consumer's message does not accept Backoff")
			}
			return fmt.Errorf("attempt %d", n)
		}
		return nil
	})
	run(t, h, r, func() bool { return h.Len(t, url) == 0 })
	if got := rec.list(); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("receive counts %v, want [1 2 3]", got)
	}
}

func suiteShutdown(t *testing.T, h Harness) {
	url := h.NewQueue(t, false)
	for i := range 5 {
		send(t, h, url, fmt.Sprint("s", i), "")
	}
	var rec recorder
	r := route(t, url, func(_ context.Context, m middleware.Message) error { rec.add(string(m.Body())); return nil })
	run(t, h, r, func() bool { return rec.len() == 5 }, consumer.WithAckFlushInterval(time.Hour))
	if n := h.Len(t, url); n != 0 {
		t.Fatalf("%d finished messages not deleted on shutdown", n)
	}
}
