package bench

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Workers is the pool size every library gets.
const Workers = 8

func noop(context.Context, middleware.Message) error { return nil }

// runCairn pushes n messages through a cairn consumer and returns the SQS
// API calls it made.
func runCairn(n int, fifo bool) (int64, error) {
	name := "bench"
	opts := []router.Option{router.WithWorkerPoolSize(Workers), router.WithWaitTimeSeconds(0), router.WithDeleteBatch()}
	if fifo {
		name = "bench.fifo"
		opts = append(opts, router.WithRunMode(router.PerGroupID))
	}
	route, err := router.New(name, noop, opts...)
	if err != nil {
		return 0, err
	}
	q := newMemSQS(n, fifo)
	c, err := consumer.New(q, route)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	select {
	case <-q.done:
	case err := <-errc:
		cancel()
		return 0, fmt.Errorf("consumer stopped early: %v", err)
	}
	cancel()
	if err := <-errc; err != nil {
		return 0, err
	}
	if got := q.deleted.Load(); got != int64(n) {
		return 0, fmt.Errorf("deleted %d of %d", got, n)
	}
	return q.calls.Load(), nil
}
