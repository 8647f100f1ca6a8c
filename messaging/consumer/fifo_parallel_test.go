package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// A FIFO queue keeps each message group in order whatever the route's run
// mode. With the default Parallel mode the consumer used to hand the
// messages of one group in a receive batch to different workers, so they
// ran concurrently, later ones finished (and were deleted) first, and a
// failed message did not hold back the rest of its group.
func TestFIFOQueueOrderedInParallelMode(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("parallel-order.fifo")
	const per = 8
	for i := range per {
		for _, g := range []string{"a", "b"} {
			if _, err := fake.Send(url, fmt.Sprint(g, i), g, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	var mu sync.Mutex
	tries := map[string]int{}
	done := map[byte][]int{}
	total := 0
	r := newRoute(t, "parallel-order.fifo", func(_ context.Context, m middleware.Message) error {
		b := string(m.Body())
		mu.Lock()
		defer mu.Unlock()
		tries[b]++
		if tries[b] == 1 && b[1] == '2' {
			// Fails once, to be retried at once: nothing of its group may
			// finish before it.
			return merrors.Backoff(errors.New("once"), 0)
		}
		done[b[0]] = append(done[b[0]], int(b[1]-'0'))
		total++
		return nil
	}, router.WithWorkerPoolSize(4)) // default run mode: Parallel
	c, err := consumer.New(fake, r)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, c, func() bool { mu.Lock(); defer mu.Unlock(); return total >= 2*per })
	mu.Lock()
	defer mu.Unlock()
	for g, got := range done {
		for i, n := range got {
			if n != i {
				t.Fatalf("group %c handled in order %v, want 0..%d", g, got, per-1)
			}
		}
	}
}
