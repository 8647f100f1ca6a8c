package fake

import (
	"context"
	"sync"
)

// calls records the inputs of one method; its zero value is ready, so the
// doubles work as struct literals.
type calls[T any] struct {
	mu sync.Mutex
	in []T
}

func (c *calls[T]) add(v T) {
	c.mu.Lock()
	c.in = append(c.in, v)
	c.mu.Unlock()
}

// list returns a copy, so a test reading it never races a later call.
func (c *calls[T]) list() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(make([]T, 0, len(c.in)), c.in...)
}

// call records in and answers with fn, or with a zero output and a nil error
// when fn is nil: the body of every client double's method.
func call[In, Out, Opt any](ctx context.Context, rec *calls[In], fn func(context.Context, In, ...Opt) (Out, error), in In, opts []Opt) (Out, error) {
	rec.add(in)
	if fn == nil {
		var zero Out
		return zero, nil
	}
	return fn(ctx, in, opts...)
}
