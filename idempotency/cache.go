package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// lru is the manager's local cache of completed records, bounded by entry count.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used
	items map[string]*list.Element
}

type lruEntry struct {
	key string
	rec Record
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

// get returns a non-expired cached record, dropping an expired one.
func (c *lru) get(key string, now time.Time) (Record, bool) {
	if c == nil {
		return Record{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return Record{}, false
	}
	rec := el.Value.(*lruEntry).rec
	if rec.Expired(now) {
		c.order.Remove(el)
		delete(c.items, key)
		return Record{}, false
	}
	c.order.MoveToFront(el)
	return rec, true
}

// add caches rec unless it is in progress, as the reference's saveToCache does.
func (c *lru) add(rec Record) {
	if c == nil || rec.Status == StatusInProgress {
		return
	}
	rec.Data = append([]byte(nil), rec.Data...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[rec.Key]; ok {
		el.Value.(*lruEntry).rec = rec
		c.order.MoveToFront(el)
		return
	}
	c.items[rec.Key] = c.order.PushFront(&lruEntry{key: rec.Key, rec: rec})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry).key)
	}
}

func (c *lru) remove(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

func (c *lru) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.items)
}
