package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// slowDeletes blocks DeleteMessageBatch until release is closed.
type slowDeletes struct {
	*messagingtest.SQS
	release chan struct{}
}

func (s slowDeletes) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.SQS.DeleteMessageBatch(ctx, in, opts...)
}

// A stalled acknowledgement path must slow receiving: finished messages
// waiting for their delete keep their slot. Releasing slots at handler return
// would receive the whole queue into an unbounded delete backlog.
func TestSlowDeletesBackPressure(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("slowdel")
	sendN(t, fake, url, 300, nil)
	client := slowDeletes{SQS: fake, release: make(chan struct{})}
	var handled atomic.Int64
	r := newRoute(t, "slowdel", func(context.Context, middleware.Message) error { handled.Add(1); return nil },
		router.WithWorkerPoolSize(2), router.WithDeleteBatch())
	c, err := consumer.New(client, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return handled.Load() >= 20 })
	time.Sleep(150 * time.Millisecond)
	inflight := 0
	for i := range 300 {
		if d, _ := fake.VisibleIn(url, fmt.Sprintf("m%04d", i)); d > 0 {
			inflight++
		}
	}
	// workers 2 + one receive of 10 + 4 delete batches of 10 in flight.
	if inflight > 52 || handled.Load() > 52 {
		t.Fatalf("%d received, %d handled with deletes stalled, want <= 52", inflight, handled.Load())
	}
	close(client.release)
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// flakyDeletes fails the first entry of each of the first n DeleteMessageBatch
// calls on SQS's side, and throttles the whole call every third time.
type flakyDeletes struct {
	*messagingtest.SQS
	calls atomic.Int64
	n     int64
}

func (s *flakyDeletes) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	call := s.calls.Add(1)
	if call > s.n {
		return s.SQS.DeleteMessageBatch(ctx, in, opts...)
	}
	if call%3 == 0 {
		return nil, errors.New("RequestThrottled: injected")
	}
	rest := *in
	rest.Entries = in.Entries[1:]
	out := &sqs.DeleteMessageBatchOutput{}
	if len(rest.Entries) > 0 {
		var err error
		if out, err = s.SQS.DeleteMessageBatch(ctx, &rest, opts...); err != nil {
			return nil, err
		}
	}
	out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: in.Entries[0].Id, Code: aws.String("InternalError"), SenderFault: false})
	return out, nil
}

// A delete that SQS fails on its side, or throttles, is sent again: the
// messages are deleted without coming back, each handled once.
func TestFailedDeletesAreRetried(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("flakydel")
	sendN(t, fake, url, 40, nil)
	client := &flakyDeletes{SQS: fake, n: 6}
	var handled, succeeded atomic.Int64
	r := newRoute(t, "flakydel", func(context.Context, middleware.Message) error { handled.Add(1); return nil }, router.WithDeleteBatch())
	c, err := consumer.New(client, r, consumer.WithSuccessMetric(func(string) { succeeded.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return fake.Len(url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if handled.Load() != 40 || succeeded.Load() != 40 {
		t.Fatalf("handled %d, counted %d successes; want each of 40 messages once", handled.Load(), succeeded.Load())
	}
	if client.calls.Load() <= client.n {
		t.Fatalf("%d delete calls: the failures were never exercised", client.calls.Load())
	}
}
