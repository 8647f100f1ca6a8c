package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/fake"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

func sendN(t *testing.T, fake *messagingtest.SQS, url string, n int, group func(i int) string) []string {
	t.Helper()
	var bodies []string
	for i := range n {
		b := fmt.Sprintf("m%04d", i)
		g := ""
		if group != nil {
			g = group(i)
		}
		if _, err := fake.Send(url, b, g, nil); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	return bodies
}

// Finished messages must be deleted on shutdown even though the run context
// is canceled: the final flush uses context.WithoutCancel. A naive final
// flush with the canceled context leaves them all to be redelivered.
func TestShutdownFlushesFinishedMessages(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("flush")
	sendN(t, fake, url, 5, nil)
	var done atomic.Int64
	r := newRoute(t, "flush", func(context.Context, middleware.Message) error { done.Add(1); return nil })
	// A flush interval far beyond the test: only the final flush can delete.
	c, err := consumer.New(fake, r, consumer.WithAckFlushInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return done.Load() == 5 })
	if n := fake.Len(url); n != 0 {
		t.Fatalf("%d finished messages left undeleted after shutdown", n)
	}
}

// A handler cut off by the shutdown timeout did not finish: its message and
// the received-but-unstarted ones are never deleted, and the unstarted ones
// are released for redelivery.
func TestShutdownNeverDeletesUnfinished(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("unfinished")
	sendN(t, fake, url, 4, nil)
	started := make(chan struct{}, 4)
	var calls atomic.Int64
	r := newRoute(t, "unfinished", func(ctx context.Context, _ middleware.Message) error {
		calls.Add(1)
		started <- struct{}{}
		<-ctx.Done() // never finishes on its own
		return ctx.Err()
	}, router.WithWorkerPoolSize(1))
	// The timeout leaves the final flush, which releases the unstarted
	// messages, a share long enough for a loaded machine under -race.
	c, err := consumer.New(fake, r, consumer.WithShutdownTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return len(started) > 0 })
	if calls.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", calls.Load())
	}
	if n := fake.Len(url); n != 4 {
		t.Fatalf("queue has %d messages, want all 4 kept", n)
	}
	visible := 0
	for i := range 4 {
		if d, _ := fake.VisibleIn(url, fmt.Sprintf("m%04d", i)); d == 0 {
			visible++
		}
	}
	if visible != 3 {
		t.Fatalf("%d messages released for redelivery, want the 3 unstarted", visible)
	}
}

// The heartbeat counts from receive time: a message waiting behind a slow
// one in the worker queue is extended before its timeout lapses, although no
// worker has picked it up. A heartbeat started at pickup would let it expire.
func TestHeartbeatStartsAtReceive(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := messagingtest.NewSQS()
	fake.SetNow(clk.Now)
	url, _ := fake.AddQueue("heartbeat")
	sendN(t, fake, url, 2, nil)
	release := make(chan struct{})
	var started atomic.Int64
	r := newRoute(t, "heartbeat", func(ctx context.Context, _ middleware.Message) error {
		if started.Add(1) == 1 {
			<-release
		}
		return nil
	}, router.WithWorkerPoolSize(1), router.WithVisibilityTimeout(30))
	c, err := consumer.New(fake, r, consumer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return started.Load() == 1 && clk.Tickers() > 0 })
	waiting := ""
	for _, b := range []string{"m0000", "m0001"} {
		if d, _ := fake.VisibleIn(url, b); d > 0 {
			waiting = b
		}
	}
	clk.Advance(25 * time.Second) // 5 s left of the 30 s receive-time timeout
	waitFor(t, func() bool { return fake.Calls("ChangeMessageVisibilityBatch") > 0 })
	for _, b := range []string{"m0000", "m0001"} {
		d, _ := fake.VisibleIn(url, b)
		if d < 20*time.Second {
			t.Errorf("%s (waiting=%v) visible in %s after heartbeat, want ~30s", b, b == waiting, d)
		}
	}
	close(release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// In PerGroupID mode a failed message blocks the rest of its group: later
// messages of the group already received must not run until it succeeds.
func TestPerGroupFailureBlocksGroup(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("orders.fifo")
	sendN(t, fake, url, 6, func(i int) string { return []string{"a", "b"}[i%2] })
	var mu sync.Mutex
	var order []string
	failed := false
	r := newRoute(t, "orders.fifo", func(_ context.Context, msg middleware.Message) error {
		mu.Lock()
		defer mu.Unlock()
		body := string(msg.Body())
		order = append(order, body)
		if body == "m0000" && !failed {
			failed = true
			middleware.Backoff(msg, 0) // retry at once: only ordering can hold m0002 back
			return errors.New("transient")
		}
		return nil
	}, router.WithRunMode(router.PerGroupID), router.WithWorkerPoolSize(4))
	c, err := consumer.New(fake, r)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return fake.Len(url) == 0 })
	mu.Lock()
	defer mu.Unlock()
	var groupA []string
	for _, b := range order {
		if b == "m0000" || b == "m0002" || b == "m0004" {
			groupA = append(groupA, b)
		}
	}
	if want := []string{"m0000", "m0000", "m0002", "m0004"}; !slices.Equal(groupA, want) {
		t.Fatalf("group a ran %v, want %v (full order %v)", groupA, want, order)
	}
}

// Backoff requests are bounded by the 12 h SQS limit counted from receipt;
// the consumer never sleeps on them, so other messages keep flowing.
func TestBackoffCappedAt12h(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := messagingtest.NewSQS()
	fake.SetNow(clk.Now)
	url, _ := fake.AddQueue("capped")
	sendN(t, fake, url, 3, nil)
	var handled atomic.Int64
	r := newRoute(t, "capped", func(_ context.Context, msg middleware.Message) error {
		handled.Add(1)
		switch string(msg.Body()) {
		case "m0000":
			middleware.Backoff(msg, 100*time.Hour)
		case "m0001":
			return merrors.Backoff(errors.New("later"), 1000*time.Hour)
		}
		return nil
	}, router.WithWorkerPoolSize(1))
	c, err := consumer.New(fake, r, consumer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool {
		return handled.Load() == 3 && fake.Len(url) == 2 && fake.Calls("ChangeMessageVisibilityBatch") > 0
	})
	if n := fake.VisibilityRejections(); n != 0 {
		t.Fatalf("%d visibility changes past the 12 h limit", n)
	}
	for _, b := range []string{"m0000", "m0001"} {
		d, ok := fake.VisibleIn(url, b)
		if !ok || d < 11*time.Hour || d > 12*time.Hour {
			t.Fatalf("%s visible in %s, want capped at 12h", b, d)
		}
	}
}

func TestRetryBackoffBoundedByReceiveCount(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("retry")
	sendN(t, fake, url, 1, nil)
	var handled atomic.Int64
	r := newRoute(t, "retry", func(context.Context, middleware.Message) error {
		handled.Add(1)
		return errors.New("fail")
	}, router.WithRetryBackoff(2*time.Second, time.Minute))
	c, err := consumer.New(fake, r)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return handled.Load() == 1 && fake.Calls("ChangeMessageVisibilityBatch") > 0 })
	if d, _ := fake.VisibleIn(url, "m0000"); d < time.Second || d > 2*time.Second {
		t.Fatalf("visible in %s, want the 2s base backoff", d)
	}
}

// Errors are classified by type: retry, fatal (DLQ observer, released at
// once), and exhaustion by receive count.
func TestErrorClassificationAndDLQObserver(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("classify")
	dlqURL, _ := fake.AddQueue("classify-dlq")
	fake.SetRedrive(url, dlqURL, 2)
	if _, err := fake.Send(url, "poison", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Send(url, "flaky", "", nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	observed := map[string]int{}
	var metric atomic.Int64
	r := newRoute(t, "classify", func(_ context.Context, msg middleware.Message) error {
		if string(msg.Body()) == "poison" {
			return fmt.Errorf("decode: %w", merrors.Fatal(errors.New("bad json")))
		}
		middleware.Backoff(msg, 0)
		return errors.New("flaky")
	}, router.WithDLQ(2, router.WithOnDLQ(func(_ context.Context, msg middleware.Message) {
		mu.Lock()
		observed[string(msg.Body())+fmt.Sprint("@", middleware.ReceiveCount(msg))]++
		mu.Unlock()
	})))
	c, err := consumer.New(fake, r, consumer.WithDLQMetric(func(string) { metric.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return fake.Len(dlqURL) == 2 })
	mu.Lock()
	defer mu.Unlock()
	// Each is observed once, on its last receive before the redrive.
	if observed["poison@2"] != 1 || observed["poison@1"] != 0 || observed["flaky@2"] != 1 || observed["flaky@1"] != 0 {
		t.Fatalf("observer calls %v", observed)
	}
	if metric.Load() != 2 {
		t.Fatalf("dlq metric %d, want 2", metric.Load())
	}
}

// Shutdown under load loses no message and duplicates none that finished:
// every message whose handler returned nil is deleted exactly when it
// finished, every other message stays in the queue, and a second run handles
// exactly the rest.
func TestShutdownUnderLoad(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("load")
	const n = 500
	all := sendN(t, fake, url, n, nil)
	var mu sync.Mutex
	finished := map[string]int{}
	deleted := map[string]bool{}
	ids := map[string]string{}
	fake.Deleted = func(_, id string) { deleted[id] = true } // called under the fake's lock
	handler := func(ctx context.Context, msg middleware.Message) error {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		mu.Lock()
		finished[string(msg.Body())]++
		ids[string(msg.Body())] = middleware.MessageID(msg)
		mu.Unlock()
		return nil
	}
	r := newRoute(t, "load", handler, router.WithWorkerPoolSize(8), router.WithPollers(2))
	// Handlers here are quick, so the drain ends long before the timeout;
	// the timeout only has to leave the final flush room on a loaded machine.
	c, err := consumer.New(fake, r, consumer.WithShutdownTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { mu.Lock(); defer mu.Unlock(); return len(finished) >= n/3 })

	mu.Lock()
	firstRun := len(finished)
	for b, k := range finished {
		if k != 1 {
			t.Fatalf("%s finished %d times in one run", b, k)
		}
	}
	left := map[string]bool{}
	for _, b := range fake.Bodies(url) {
		left[b] = true
	}
	for _, b := range all {
		_, done := finished[b]
		if done == left[b] {
			t.Fatalf("%s: finished=%v but still in queue=%v", b, done, left[b])
		}
		if done && !deleted[ids[b]] {
			t.Fatalf("%s finished but not deleted", b)
		}
	}
	mu.Unlock()
	if firstRun == n {
		t.Fatal("shutdown happened after the whole load; the test proves nothing")
	}

	// Second run: only the rest, each once. Unstarted ones were released.
	c2, err := consumer.New(fake, r)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c2, func() bool { return fake.Len(url) == 0 })
	mu.Lock()
	defer mu.Unlock()
	for _, b := range all {
		if finished[b] != 1 {
			t.Fatalf("%s finished %d times overall, want exactly once", b, finished[b])
		}
	}
}

// Pollers receive only what the worker pool has room for.
func TestPollersBackPressure(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("pressure")
	sendN(t, fake, url, 200, nil)
	release := make(chan struct{})
	var started atomic.Int64
	r := newRoute(t, "pressure", func(ctx context.Context, _ middleware.Message) error {
		started.Add(1)
		<-release
		return nil
	}, router.WithWorkerPoolSize(2), router.WithPollers(3), router.WithMaxMessages(10))
	c, err := consumer.New(fake, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return started.Load() == 2 })
	time.Sleep(100 * time.Millisecond)
	inflight := 0
	for i := range 200 {
		if d, _ := fake.VisibleIn(url, fmt.Sprintf("m%04d", i)); d > 0 {
			inflight++
		}
	}
	// capacity = workers + MaxMessages*pollers + 10*4 pending deletes
	if inflight > 2+10*3+40 {
		t.Fatalf("%d messages received with only 2 busy workers, want <= 72", inflight)
	}
	close(release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestScheduledRetry(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fake := messagingtest.NewSQS()
	url, arn := fake.AddQueue("entry.fifo")
	dlqURL, _ := fake.AddQueue("entry-dlq.fifo")
	sched := messagingtest.NewScheduler(fake)
	if _, err := fake.Send(url, "bad", "g1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Send(url, "good", "g1", nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	r := newRoute(t, "entry.fifo", func(_ context.Context, msg middleware.Message) error {
		rc := msg.Attribute(consumer.RetryCountAttribute)
		mu.Lock()
		order = append(order, string(msg.Body())+"#"+rc)
		mu.Unlock()
		if string(msg.Body()) == "bad" {
			return errors.New("transient")
		}
		return nil
	}, router.WithRunMode(router.PerGroupID), router.WithScheduledRetry(
		router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/sched"),
		router.WithScheduledDLQ(dlqURL), router.WithMaxRetryCount(2),
		router.WithBackoff(time.Second, time.Minute)))

	if c, _ := consumer.New(fake, r); c.Run(context.Background()) != merrors.ErrNoSchedulerClient {
		t.Fatal("Run without scheduler client did not fail fast")
	}
	var success, retry, dead atomic.Int64
	c, err := consumer.New(fake, r, consumer.WithSchedulerClient(sched), consumer.WithClock(clk),
		consumer.WithSuccessMetric(func(string) { success.Add(1) }),
		consumer.WithRetryMetric(func(string) { retry.Add(1) }),
		consumer.WithDeadLetterMetric(func(string) { dead.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	// First failure: scheduled, original deleted, the group is not blocked.
	waitFor(t, func() bool { return retry.Load() == 1 && success.Load() == 1 && fake.Len(url) == 0 })
	s := sched.Schedules()
	if len(s) != 1 || s[0].ActionAfterCompletion != "DELETE" || s[0].FlexibleTimeWindow.Mode != "OFF" ||
		!strings.HasPrefix(*s[0].ScheduleExpression, "at(2026-03-01T12:00:01") || *s[0].Target.RoleArn != "arn:aws:iam::000000000000:role/sched" {
		t.Fatalf("schedule %+v", s[0])
	}
	for attempt := 1; attempt <= 2; attempt++ {
		clk.Advance(time.Minute)
		if n, err := sched.Fire(ctx, clk.Now(), ""); err != nil || n != 1 {
			t.Fatalf("Fire = %d, %v", n, err)
		}
		want := int64(attempt + 1)
		if attempt == 2 {
			waitFor(t, func() bool { return dead.Load() == 1 && fake.Len(url) == 0 })
		} else {
			waitFor(t, func() bool { return retry.Load() == want && fake.Len(url) == 0 })
		}
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"bad#", "good#", "bad#1", "bad#2"}; !slices.Equal(order, want) {
		t.Fatalf("order %v want %v", order, want)
	}
	if b := fake.Bodies(dlqURL); len(b) != 1 || b[0] != "bad" {
		t.Fatalf("dlq %v", b)
	}
	if retry.Load() != 2 || dead.Load() != 1 || success.Load() != 1 {
		t.Fatalf("metrics retry=%d dead=%d success=%d", retry.Load(), dead.Load(), success.Load())
	}
}

// A fatal error on a WithDLQ route is one dead letter, not one per receive:
// with maxReceiveCount 5 the handler runs once, OnDLQ and the DLQ metric
// fire once, and SQS redrives the message.
func TestFatalOnDLQRouteCountedOnce(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("fatal-once")
	dlqURL, _ := fake.AddQueue("fatal-once-dlq")
	fake.SetRedrive(url, dlqURL, 5)
	if _, err := fake.Send(url, "poison", "", nil); err != nil {
		t.Fatal(err)
	}
	var handled, onDLQ, metric atomic.Int64
	type order struct{ ID string }
	r := newRoute(t, "fatal-once", typed.WrapHandler(typed.JSONCodec[order]{}, func(context.Context, order) error {
		return nil
	}), router.WithMiddleware(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, m middleware.Message) error { handled.Add(1); return next(ctx, m) }
	}), router.WithDLQ(5, router.WithOnDLQ(func(context.Context, middleware.Message) { onDLQ.Add(1) })))
	c, err := consumer.New(fake, r, consumer.WithDLQMetric(func(string) { metric.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { return fake.Len(dlqURL) == 1 })
	if handled.Load() != 1 || onDLQ.Load() != 1 || metric.Load() != 1 {
		t.Fatalf("handler ran %d times, OnDLQ %d, metric %d; want 1 each", handled.Load(), onDLQ.Load(), metric.Load())
	}
}

// stuckReceiver is an SQS client whose ReceiveMessage outlives the
// cancellation of its context until release is closed.
type stuckReceiver struct {
	*messagingtest.SQS
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *stuckReceiver) ReceiveMessage(ctx context.Context, _ *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	s.once.Do(func() { close(s.entered) })
	<-ctx.Done()
	<-s.release
	return nil, ctx.Err()
}

// The shutdown timeout bounds the whole drain, counted from cancellation: a
// receive that ignores its canceled context does not hold Run past it. Run
// logs the abandonment at Error and refuses to run again until the receive
// has returned.
func TestShutdownTimeoutBoundsStuckReceive(t *testing.T) {
	t.Parallel()
	client := &stuckReceiver{SQS: messagingtest.NewSQS(), entered: make(chan struct{}), release: make(chan struct{})}
	url, _ := client.AddQueue("stuck")
	logs := fake.NewLogHandler()
	c, err := consumer.New(client, newRoute(t, url, func(context.Context, middleware.Message) error { return nil }),
		consumer.WithShutdownTimeout(50*time.Millisecond), consumer.WithLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	<-client.entered
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		close(client.release)
		t.Fatal("Run did not return while a receive ignored its canceled context")
	}
	var errorLogs int
	for _, r := range logs.Records() {
		if r.Level == slog.LevelError && strings.Contains(r.Message, "shutdown timeout exceeded") {
			errorLogs++
		}
	}
	if errorLogs != 1 {
		t.Fatalf("%d Error records about the exceeded shutdown timeout, want 1: %+v", errorLogs, logs.Records())
	}
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Run while the receive is stuck = %v, want already running", err)
	}
	close(client.release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.Run(ctx); err == nil || !strings.Contains(err.Error(), "already running") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("consumer still running after the stuck receive returned")
		}
		time.Sleep(time.Millisecond)
	}
}
