package broker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/messaging/broker"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// The emulator test leaves the SDK's idle keep-alive connections behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

func TestNewNoRoutes(t *testing.T) {
	t.Parallel()
	if _, err := broker.New(messagingtest.NewSQS(), nil); !errors.Is(err, merrors.ErrNoRoute) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRefusesNonPositiveDurations(t *testing.T) {
	t.Parallel()
	r, err := router.New("q", func(context.Context, middleware.Message) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]broker.Option{
		"zero retry": broker.WithRetryTimeout(0), "negative retry": broker.WithRetryTimeout(-time.Second),
		"zero shutdown": broker.WithShutdownTimeout(0), "negative shutdown": broker.WithShutdownTimeout(-time.Second),
	} {
		if b, err := broker.New(messagingtest.NewSQS(), []*router.Route{r}, opt); b != nil || !errors.Is(err, merrors.ErrInvalidOption) {
			t.Errorf("%s: broker %v, error %v; want nil and ErrInvalidOption", name, b, err)
		}
	}
	if _, err := broker.New(messagingtest.NewSQS(), []*router.Route{r}, broker.WithRetryTimeout(time.Second), broker.WithShutdownTimeout(time.Second)); err != nil {
		t.Fatalf("positive durations: %v", err)
	}
}

// The broker must hand the scheduler client and metric hooks to the
// consumers it creates; without them a Scheduled Retry route cannot start.
func TestBrokerForwardsSchedulerAndMetrics(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, arn := fake.AddQueue("b.fifo")
	dlq, _ := fake.AddQueue("b-dlq.fifo")
	if _, err := fake.Send(url, "x", "g", nil); err != nil {
		t.Fatal(err)
	}
	r, err := router.New("b.fifo", func(context.Context, middleware.Message) error { return errors.New("fail") },
		router.WithWaitTimeSeconds(1), router.WithScheduledRetry(
			router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/r"), router.WithScheduledDLQ(dlq),
			router.WithMaxRetryCount(3)))
	if err != nil {
		t.Fatal(err)
	}
	// Without the scheduler the broker fails fast.
	b0, err := broker.New(fake, []*router.Route{r}, broker.WithLogger(logger.NewNoOp()))
	if err != nil {
		t.Fatal(err)
	}
	if err := b0.Run(context.Background()); !errors.Is(err, merrors.ErrNoSchedulerClient) {
		t.Fatalf("Run without scheduler = %v", err)
	}
	var retries atomic.Int64
	b, err := broker.New(fake, []*router.Route{r}, broker.WithLogger(logger.NewNoOp()),
		broker.WithSchedulerClient(messagingtest.NewScheduler(fake)),
		broker.WithRetryMetric(func(string) { retries.Add(1) }), broker.WithShutdownTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for retries.Load() == 0 || fake.Len(url) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("no retry scheduled through the broker")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestBrokerMiddlewareOrder(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("mw")
	if _, err := fake.Send(url, "x", "", nil); err != nil {
		t.Fatal(err)
	}
	var trace []string
	tag := func(s string) middleware.Middleware {
		return func(next middleware.Handler) middleware.Handler {
			return func(ctx context.Context, m middleware.Message) error {
				trace = append(trace, s)
				return next(ctx, m)
			}
		}
	}
	done := make(chan struct{})
	r, err := router.New("mw", func(context.Context, middleware.Message) error {
		trace = append(trace, "handler")
		close(done)
		return nil
	}, router.WithWaitTimeSeconds(1), router.WithWorkerPoolSize(1), router.WithMiddleware(tag("route")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(fake, []*router.Route{r}, broker.WithLogger(logger.NewNoOp()), broker.WithGlobalMiddleware(tag("global")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	<-done
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := []string{"global", "route", "handler"}; trace[0] != got[0] || trace[1] != got[1] || trace[2] != got[2] {
		t.Fatalf("order %v", trace)
	}
}

// WithShutdownTimeout bounds Run even when a handler ignores cancellation:
// Run returns while the handler is still blocked (it blocks until the test
// ends), and the unfinished message is not deleted.
func TestShutdownTimeoutIsABound(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("stuck")
	if _, err := fake.Send(url, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	r, err := router.New("stuck", func(context.Context, middleware.Message) error {
		started <- struct{}{}
		<-release // ignores ctx
		return nil
	}, router.WithWaitTimeSeconds(0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(fake, []*router.Route{r}, broker.WithLogger(logger.NewNoOp()),
		broker.WithShutdownTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	<-started
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("Run still waits for a handler that ignores cancellation")
	}
	close(release)
	if fake.Len(url) != 1 {
		t.Fatalf("queue has %d messages, want the unfinished one kept", fake.Len(url))
	}
}
