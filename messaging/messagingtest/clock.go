package messagingtest

import (
	"sync"
	"time"

	"github.com/cairn-go/cairn/messaging/consumer"
)

// Clock is a manual clock satisfying consumer.Clock. Tickers fire only when
// Advance moves time past their next tick.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*ticker
}

// NewClock returns a Clock set to start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves time forward by d, firing due tickers (at most one pending
// tick each, like time.Ticker).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	ts := append([]*ticker(nil), c.tickers...)
	c.mu.Unlock()
	for _, t := range ts {
		t.fire(now)
	}
}

// NewTicker returns a ticker driven by Advance.
func (c *Clock) NewTicker(d time.Duration) consumer.Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticker{c: c, period: d, next: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	return t
}

// Tickers reports how many tickers are live (lets tests wait for a consumer
// to start its heartbeat).
func (c *Clock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

type ticker struct {
	c      *Clock
	mu     sync.Mutex
	period time.Duration
	next   time.Time
	ch     chan time.Time
}

func (t *ticker) C() <-chan time.Time { return t.ch }

func (t *ticker) fire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.next) {
		return
	}
	for !now.Before(t.next) {
		t.next = t.next.Add(t.period)
	}
	select {
	case t.ch <- now:
	default:
	}
}

func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.tickers {
		if x == t {
			t.c.tickers = append(t.c.tickers[:i], t.c.tickers[i+1:]...)
			return
		}
	}
}
