package fake

import "sync"

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
