package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Extensions stop at the 12 h SQS limit counted from receipt: a long
// visibility timeout is extended only by what is left, never by a full
// timeout the service would reject.
func TestHeartbeatCappedAt12h(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := messagingtest.NewSQS()
	fake.SetNow(clk.Now)
	url, _ := fake.AddQueue("long")
	sendN(t, fake, url, 1, nil)
	release := make(chan struct{})
	var started atomic.Int64
	r := newRoute(t, "long", func(context.Context, middleware.Message) error {
		started.Add(1)
		<-release
		return nil
	}, router.WithVisibilityTimeout(6*3600), router.WithExtensionLimit(5))
	c, err := consumer.New(fake, r, consumer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return started.Load() == 1 && clk.Tickers() > 0 })
	// 6 h timeout, extended with 2 h left: at 4 h for 6 h (to 10 h), then at
	// 8 h only the 4 h left until the 12 h limit.
	for i, step := range []time.Duration{4*time.Hour + time.Second, 4 * time.Hour} {
		before := fake.Calls("ChangeMessageVisibilityBatch")
		clk.Advance(step)
		waitFor(t, func() bool { return fake.Calls("ChangeMessageVisibilityBatch") > before })
		d, _ := fake.VisibleIn(url, "m0000")
		if want := []time.Duration{6 * time.Hour, 4*time.Hour - 2*time.Second}[i]; d < want-time.Second || d > want+time.Second {
			t.Fatalf("extension %d: visible in %s, want ~%s", i+1, d, want)
		}
	}
	if n := fake.VisibilityRejections(); n != 0 {
		t.Fatalf("%d extensions past 12 h", n)
	}
	close(release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func FuzzQueueURLFromARN(f *testing.F) {
	f.Add("arn:aws:sqs:us-east-1:000000000000:orders.fifo")
	f.Add("arn:aws-cn:sqs:cn-north-1:1:q")
	f.Add("arn:aws:sns:us-east-1:1:t")
	f.Add(":::::")
	f.Fuzz(func(t *testing.T, arn string) {
		url, err := router.QueueURLFromARN(arn)
		if err != nil {
			return
		}
		p := strings.Split(arn, ":")
		if !strings.HasPrefix(url, "https://sqs."+p[3]+".") || !strings.HasSuffix(url, "/"+p[4]+"/"+p[5]) {
			t.Fatalf("%q -> %q", arn, url)
		}
	})
}

// A message whose visibility lapsed while it waited for a worker is not run
// on the stale delivery: SQS redelivers it (receive count 2) and only that
// delivery runs, so the handler never runs it twice.
func TestLapsedMessageNotRun(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := messagingtest.NewSQS()
	fake.SetNow(clk.Now)
	url, _ := fake.AddQueue("lapse")
	sendN(t, fake, url, 2, nil)
	release := make(chan struct{})
	var mu sync.Mutex
	var runs []string
	r := newRoute(t, "lapse", func(_ context.Context, m middleware.Message) error {
		mu.Lock()
		first := len(runs) == 0
		runs = append(runs, fmt.Sprint(string(m.Body()), "@", middleware.ReceiveCount(m)))
		mu.Unlock()
		if first {
			<-release
		}
		return nil
	}, router.WithWorkerPoolSize(1), router.WithExtensionLimit(0))
	c, err := consumer.New(fake, r, consumer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 })
	clk.Advance(31 * time.Second) // both timeouts lapse; no extensions allowed
	close(release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// m0000 lapsed while running, so its redelivery may run it again; m0001
	// lapsed while waiting and must run once, on its redelivery.
	var waiting []string
	for _, r := range runs {
		if strings.HasPrefix(r, "m0001") {
			waiting = append(waiting, r)
		}
	}
	if len(waiting) != 1 || waiting[0] != "m0001@2" {
		t.Fatalf("runs %v: the waiting message must run only on its redelivery", runs)
	}
}
