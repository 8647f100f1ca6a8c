package bench

import (
	"context"
	"sync"
	"sync/atomic"
)

// Steps is how many steps (activities) each benchmarked workflow runs in sequence.
const Steps = 3

// Starters is how many goroutines start runs and await them at once, for every
// library: throughput, not latency, is measured.
const Starters = 8

// drive runs n operations on Starters goroutines and returns the first error.
func drive(ctx context.Context, n int, op func(ctx context.Context, i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range Starters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := op(ctx, i); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
