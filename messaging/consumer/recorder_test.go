package consumer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
)

type countingRecorder struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *countingRecorder) inc(kind, route string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[kind+":"+route]++
}
func (r *countingRecorder) IncDLQ(route string)        { r.inc("dlq", route) }
func (r *countingRecorder) IncSuccess(route string)    { r.inc("success", route) }
func (r *countingRecorder) IncRetry(route string)      { r.inc("retry", route) }
func (r *countingRecorder) IncDeadLetter(route string) { r.inc("dead", route) }

func (r *countingRecorder) get(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[key]
}

// WithMetrics feeds a loafer-awsx style recorder, and a later nil recorder
// leaves it in place.
func TestWithMetricsRecorder(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("recorded")
	sendN(t, fake, url, 5, nil)
	rec := &countingRecorder{counts: map[string]int{}}
	r := newRoute(t, "recorded", func(context.Context, middleware.Message) error { return nil })
	c, err := consumer.New(fake, r, consumer.WithMetrics(rec), consumer.WithMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return rec.get("success:recorded") == 5 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := rec.get("dlq:recorded") + rec.get("retry:recorded") + rec.get("dead:recorded"); got != 0 {
		t.Fatalf("counted %d failures for 5 handled messages: %v", got, rec.counts)
	}
}
