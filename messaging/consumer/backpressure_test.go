package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

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
		router.WithWorkerPoolSize(2))
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
