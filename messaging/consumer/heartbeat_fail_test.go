package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// failingExtensions is the fake SQS with every visibility change failing,
// as when SQS throttles ChangeMessageVisibilityBatch.
type failingExtensions struct {
	*messagingtest.SQS
	calls atomic.Int64
}

func (f *failingExtensions) ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.calls.Add(1)
	return nil, errors.New("throttled")
}

// A failed extension does not extend anything: a message waiting for a
// worker whose extension failed lapses at its original timeout, SQS
// redelivers it, and the stale delivery must not run (it would run twice,
// and on a FIFO queue out of order with the redelivery's successors). The
// heartbeat used to count the extension as made before sending it.
func TestFailedExtensionDoesNotExtend(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := &failingExtensions{SQS: messagingtest.NewSQS()}
	fake.SetNow(clk.Now)
	url, _ := fake.AddQueue("extfail")
	sendN(t, fake.SQS, url, 2, nil)
	release := make(chan struct{})
	var mu sync.Mutex
	var runs []string
	r := newRoute(t, "extfail", func(_ context.Context, m middleware.Message) error {
		mu.Lock()
		first := len(runs) == 0
		runs = append(runs, fmt.Sprint(string(m.Body()), "@", middleware.ReceiveCount(m)))
		mu.Unlock()
		if first {
			<-release
		}
		return nil
	}, router.WithWorkerPoolSize(1), router.WithExtensionLimit(2))
	c, err := consumer.New(fake, r, consumer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 && clk.Tickers() > 0 })
	// 30 s timeout: at 21 s a third is left, so the heartbeat extends, and
	// the extension fails.
	clk.Advance(21 * time.Second)
	waitFor(t, func() bool { return fake.calls.Load() > 0 })
	clk.Advance(10 * time.Second) // past the original 30 s: both lapse in SQS
	close(release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var waiting []string
	for _, r := range runs {
		if strings.HasPrefix(r, "m0001") {
			waiting = append(waiting, r)
		}
	}
	if len(waiting) != 1 || waiting[0] != "m0001@2" {
		t.Fatalf("runs %v: the waiting message's extension failed, so it must run only on its redelivery", runs)
	}
}

// flakyExtensions fails the first visibility change and passes the rest.
type flakyExtensions struct {
	*messagingtest.SQS
	calls atomic.Int64
}

func (f *flakyExtensions) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if f.calls.Add(1) == 1 {
		return nil, errors.New("throttled")
	}
	return f.SQS.ChangeMessageVisibilityBatch(ctx, in, opts...)
}

// A failed extension is tried again on the next tick rather than taken as
// done, so one throttled call does not let the messages lapse and be
// handled twice.
func TestFailedExtensionRetriedNextTick(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := &flakyExtensions{SQS: messagingtest.NewSQS()}
	fake.SetNow(clk.Now)
	url, _ := fake.AddQueue("extretry")
	sendN(t, fake.SQS, url, 2, nil)
	release := make(chan struct{})
	var mu sync.Mutex
	var runs []string
	r := newRoute(t, "extretry", func(_ context.Context, m middleware.Message) error {
		mu.Lock()
		first := len(runs) == 0
		runs = append(runs, fmt.Sprint(string(m.Body()), "@", middleware.ReceiveCount(m)))
		mu.Unlock()
		if first {
			<-release
		}
		return nil
	}, router.WithWorkerPoolSize(1), router.WithExtensionLimit(2))
	c, err := consumer.New(fake, r, consumer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 && clk.Tickers() > 0 })
	clk.Advance(21 * time.Second) // due; the extension fails
	waitFor(t, func() bool { return fake.calls.Load() == 1 })
	clk.Advance(time.Second) // next tick: tried again
	waitFor(t, func() bool { return fake.calls.Load() == 2 })
	clk.Advance(10 * time.Second) // past the original 30 s, within the extension
	close(release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "[m0000@1 m0001@1]"; fmt.Sprint(runs) != want {
		t.Fatalf("runs %v, want %s: the retried extension keeps both in flight", runs, want)
	}
}
