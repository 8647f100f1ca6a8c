package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// tenAttrs is the most attributes SQS allows on one message.
func tenAttrs() map[string]string {
	m := make(map[string]string, 10)
	for i := range 10 {
		m["attr"+strconv.Itoa(i)] = "v" + strconv.Itoa(i)
	}
	return m
}

type scheduledRun struct {
	fake        *messagingtest.SQS
	sched       *messagingtest.Scheduler
	clk         *messagingtest.Clock
	url, dlq    string
	retry, dead atomic.Int64
	mu          sync.Mutex
	seen        []string // body#retry_count per handler call
	cancel      func()
	errc        chan error
	opts        []router.ScheduledRetryOption // more options of the route
}

// startScheduled runs a Scheduled Retry consumer on queue name whose handler
// fails the first `failures` deliveries of every message.
func startScheduled(t *testing.T, name string, maxRetries, failures int, mutate func(*scheduledRun)) *scheduledRun {
	t.Helper()
	s := &scheduledRun{fake: messagingtest.NewSQS(), clk: messagingtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	var arn string
	s.url, arn = s.fake.AddQueue(name)
	dlqName := "dlq-" + name
	s.dlq, _ = s.fake.AddQueue(dlqName)
	s.sched = messagingtest.NewScheduler(s.fake)
	if mutate != nil {
		mutate(s)
	}
	calls := map[string]int{}
	r := newRoute(t, name, func(_ context.Context, msg middleware.Message) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.seen = append(s.seen, string(msg.Body())+"#"+msg.Attribute(consumer.RetryCountAttribute))
		calls[string(msg.Body())]++
		if calls[string(msg.Body())] <= failures {
			return errors.New("transient")
		}
		return nil
	}, router.WithRunMode(router.PerGroupID), router.WithScheduledRetry(append([]router.ScheduledRetryOption{
		router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/sched"),
		router.WithScheduledDLQ(s.dlq), router.WithMaxRetryCount(maxRetries),
		router.WithBackoff(time.Second, time.Second)}, s.opts...)...))
	c, err := consumer.New(s.fake, r, consumer.WithSchedulerClient(s.sched), consumer.WithClock(s.clk),
		consumer.WithRetryMetric(func(string) { s.retry.Add(1) }),
		consumer.WithDeadLetterMetric(func(string) { s.dead.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.errc = cancel, make(chan error, 1)
	go func() { s.errc <- c.Run(ctx) }()
	return s
}

func (s *scheduledRun) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	if err := <-s.errc; err != nil {
		t.Fatal(err)
	}
}

func (s *scheduledRun) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// A FIFO message with 10 attributes has no room for retry_count: its retry
// carries the count in the deduplication ID instead, so the scheduled
// SendMessage is accepted and the message comes back.
func TestScheduledRetryTenAttributesFIFO(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "full.fifo", 3, 2, nil)
	if _, err := s.fake.Send(s.url, "m", "g", tenAttrs()); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		waitFor(t, func() bool { return s.retry.Load() == int64(attempt) && s.fake.Len(s.url) == 0 })
		s.clk.Advance(time.Minute)
		if n, err := s.sched.Fire(context.Background(), s.clk.Now(), ""); err != nil || n != 1 {
			t.Fatalf("attempt %d: scheduled send rejected (%d, %v): the message is lost", attempt, n, err)
		}
	}
	waitFor(t, func() bool { return s.calls() == 3 && s.fake.Len(s.url) == 0 })
	s.stop(t)
	for _, in := range s.sched.Schedules() {
		if len(*in.Target.Input) == 0 {
			t.Fatal("empty schedule input")
		}
	}
	if s.dead.Load() != 0 || s.fake.Len(s.dlq) != 0 {
		t.Fatalf("dead-lettered %d", s.dead.Load())
	}
}

// The retry count carried in the deduplication ID still ends the retries:
// with MaxRetryCount 1 the second failure dead-letters the message, and the
// DLQ send, with no room for retry_count either, keeps all 10 attributes.
func TestScheduledRetryTenAttributesReachDLQ(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "full2.fifo", 1, 100, nil)
	if _, err := s.fake.Send(s.url, "m", "g", tenAttrs()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.retry.Load() == 1 && s.fake.Len(s.url) == 0 })
	s.clk.Advance(time.Minute)
	if n, err := s.sched.Fire(context.Background(), s.clk.Now(), ""); err != nil || n != 1 {
		t.Fatalf("scheduled send rejected (%d, %v)", n, err)
	}
	waitFor(t, func() bool { return s.dead.Load() == 1 && s.fake.Len(s.url) == 0 })
	s.stop(t)
	if got := s.fake.Bodies(s.dlq); len(got) != 1 || got[0] != "m" {
		t.Fatalf("dlq %v", got)
	}
}

// Dead-lettering a message with 10 attributes at once (MaxRetryCount 0) must
// not add an 11th: SQS would reject it and the message would stay stuck.
func TestScheduledDLQTenAttributes(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "full3.fifo", 0, 100, nil)
	if _, err := s.fake.Send(s.url, "m", "g", tenAttrs()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.dead.Load() == 1 && s.fake.Len(s.url) == 0 })
	s.stop(t)
	if got := s.fake.Bodies(s.dlq); len(got) != 1 {
		t.Fatalf("dlq %v", got)
	}
}

// On a standard queue there is no deduplication ID to carry the count: a
// message with 10 attributes is retried in place (visibility), never
// deleted, and no schedule is created.
func TestScheduledRetryTenAttributesStandardStaysInQueue(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "full-standard", 3, 100, nil)
	if _, err := s.fake.Send(s.url, "m", "", tenAttrs()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.calls() >= 1 })
	time.Sleep(50 * time.Millisecond) // let any (wrong) delete be sent
	s.stop(t)
	if s.fake.Len(s.url) != 1 || len(s.sched.Schedules()) != 0 || s.retry.Load() != 0 {
		t.Fatalf("queue %d, schedules %d, retries %d", s.fake.Len(s.url), len(s.sched.Schedules()), s.retry.Load())
	}
}

// A scheduled retry on a standard queue carries no deduplication ID (SQS
// rejects one there), and its send is accepted.
func TestScheduledRetryStandardQueueNoDedupID(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "plain", 3, 1, nil)
	if _, err := s.fake.Send(s.url, "m", "", map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.retry.Load() == 1 && s.fake.Len(s.url) == 0 })
	s.clk.Advance(time.Minute)
	if n, err := s.sched.Fire(context.Background(), s.clk.Now(), ""); err != nil || n != 1 {
		t.Fatalf("scheduled send rejected (%d, %v)", n, err)
	}
	waitFor(t, func() bool { return s.calls() == 2 && s.fake.Len(s.url) == 0 })
	s.stop(t)
}

// When CreateSchedule fails the original stays in the queue for redelivery.
func TestScheduleFailureKeepsOriginal(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "schedfail.fifo", 3, 100, func(s *scheduledRun) {
		s.sched.Err = errors.New("throttled")
	})
	if _, err := s.fake.Send(s.url, "m", "g", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.calls() >= 1 })
	time.Sleep(50 * time.Millisecond)
	s.stop(t)
	if s.fake.Len(s.url) != 1 || s.retry.Load() != 0 {
		t.Fatalf("queue %d retries %d", s.fake.Len(s.url), s.retry.Load())
	}
}

type failingSend struct {
	*messagingtest.SQS
	dlq string
}

func (f failingSend) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if *in.QueueUrl == f.dlq {
		return nil, fmt.Errorf("dlq unavailable")
	}
	return f.SQS.SendMessage(ctx, in, opts...)
}

// When the DLQ send fails the original stays in the queue.
func TestDLQPublishFailureKeepsOriginal(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, arn := fake.AddQueue("dlqfail.fifo")
	dlq, _ := fake.AddQueue("dlqfail-dlq.fifo")
	if _, err := fake.Send(url, "m", "g", nil); err != nil {
		t.Fatal(err)
	}
	var calls, dead atomic.Int64
	r := newRoute(t, "dlqfail.fifo", func(context.Context, middleware.Message) error {
		calls.Add(1)
		return errors.New("boom")
	}, router.WithScheduledRetry(router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/sched"),
		router.WithScheduledDLQ(dlq), router.WithMaxRetryCount(0)))
	c, err := consumer.New(failingSend{fake, dlq}, r, consumer.WithSchedulerClient(messagingtest.NewScheduler(fake)),
		consumer.WithDeadLetterMetric(func(string) { dead.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return calls.Load() >= 1 })
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if fake.Len(url) != 1 || fake.Len(dlq) != 0 || dead.Load() != 0 {
		t.Fatalf("queue %d dlq %d dead %d", fake.Len(url), fake.Len(dlq), dead.Load())
	}
}

// A retry schedule carries the route's scheduler dead-letter queue, so a copy
// Scheduler cannot deliver after the original was deleted is kept there
// rather than dropped; without one it carries none.
func TestScheduledRetrySchedulerDeadLetter(t *testing.T) {
	t.Parallel()
	for _, arn := range []string{"", "arn:aws:sqs:us-east-1:000000000000:retries-lost"} {
		s := startScheduled(t, "sdl-"+strconv.Itoa(len(arn)), 3, 1, func(s *scheduledRun) {
			if arn != "" {
				s.opts = []router.ScheduledRetryOption{router.WithSchedulerDeadLetter(arn)}
			}
		})
		if _, err := s.fake.Send(s.url, "m", "", nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return s.retry.Load() == 1 })
		s.stop(t)
		scheds := s.sched.Schedules()
		if len(scheds) != 1 {
			t.Fatalf("%d schedules, want 1", len(scheds))
		}
		got := ""
		if dl := scheds[0].Target.DeadLetterConfig; dl != nil {
			got = aws.ToString(dl.Arn)
		}
		if got != arn {
			t.Errorf("schedule dead-letter queue %q, want %q", got, arn)
		}
	}
}

// A retry whose schedule input would pass EventBridge Scheduler's limit is
// not scheduled (Scheduler would reject it on every receive and the message
// would never reach the DLQ): it is retried in place and, its retries used
// up, dead-lettered. A body of 100 KiB of '<' fits SQS but becomes 600 KiB
// of JSON escapes in the input.
func TestScheduledRetryScheduleInputLimit(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "bigin.fifo", 1, 100, nil)
	body := strings.Repeat("<", 100*1024)
	if _, err := s.fake.Send(s.url, body, "g", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.calls() == 1 })
	s.clk.Advance(2 * time.Second) // the in-place backoff (1 s) ends
	waitFor(t, func() bool { return s.dead.Load() == 1 && s.fake.Len(s.url) == 0 })
	s.stop(t)
	if n := len(s.sched.Schedules()); n != 0 || s.retry.Load() != 0 {
		t.Fatalf("%d schedules, %d retries: a schedule input over the limit was sent", n, s.retry.Load())
	}
	if got := s.fake.Bodies(s.dlq); len(got) != 1 || got[0] != body {
		t.Fatalf("dlq holds %d messages", len(got))
	}
}

// The DLQ is an SQS queue: a 300 KiB message (over the old 256 KiB SQS
// limit, within today's 1 MiB) still gets its retry_count there.
func TestScheduledDLQRetryCountUpTo1MiB(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "bigdlq.fifo", 0, 100, nil)
	if _, err := s.fake.Send(s.url, strings.Repeat("x", 300*1024), "g", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.dead.Load() == 1 && s.fake.Len(s.url) == 0 })
	s.stop(t)
	out, err := s.fake.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.dlq), MaxNumberOfMessages: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dlq receive: %v", err)
	}
	if v, ok := out.Messages[0].MessageAttributes[consumer.RetryCountAttribute]; !ok || aws.ToString(v.StringValue) != "0" {
		t.Fatalf("dead letter without %s: %v", consumer.RetryCountAttribute, out.Messages[0].MessageAttributes)
	}
}
