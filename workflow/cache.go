package workflow

import (
	"container/list"
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Run cache defaults, used where a [CacheConfig] field is zero.
const (
	DefaultCacheMaxRuns  = 4096
	DefaultCacheMaxBytes = 64 << 20
	DefaultCacheIdleTTL  = 10 * time.Minute
)

// CacheEnv is the environment variable that turns the run cache off for every
// client of the process when set to "off" (or "0", "false"), whatever
// [CacheConfig] says: an operational switch that needs no code change.
const CacheEnv = "CAIRN_WORKFLOW_CACHE"

// cacheEntryOverhead estimates the memory of a cached execution besides its
// history: the parked goroutine's stack and the runtime's bookkeeping.
const cacheEntryOverhead = 16 << 10

// CacheConfig bounds the run cache of a [Client]. The cache keeps the execution of
// a workflow whose delivery suspended (its goroutine, parked, and its indexed
// history) so the run's next delivery in this process resumes it after reading
// only the events appended since, instead of replaying the run from the start.
// The least recently used run is evicted first; an evicted run replays on its next
// delivery. Every field's zero value means its default.
type CacheConfig struct {
	// Disabled turns the cache off: every workflow delivery replays the run from
	// its log, and each queued step delivery replays it up to the step.
	Disabled bool
	// MaxRuns bounds the runs held; zero means DefaultCacheMaxRuns.
	MaxRuns int
	// MaxBytes bounds the estimated memory of the runs held (their events and
	// goroutines); zero means DefaultCacheMaxBytes. A run larger than MaxBytes on
	// its own is not cached.
	MaxBytes int64
	// IdleTTL evicts a run not delivered for that long; zero means
	// DefaultCacheIdleTTL. Idle runs are evicted as the cache is used.
	IdleTTL time.Duration
}

func (c CacheConfig) validate() error {
	switch {
	case c.MaxRuns < 0:
		return &ConfigError{Field: "Config.Cache.MaxRuns", Value: c.MaxRuns, Reason: "must not be negative"}
	case c.MaxBytes < 0:
		return &ConfigError{Field: "Config.Cache.MaxBytes", Value: c.MaxBytes, Reason: "must not be negative"}
	case c.IdleTTL < 0:
		return &ConfigError{Field: "Config.Cache.IdleTTL", Value: c.IdleTTL, Reason: "must not be negative"}
	}
	return nil
}

// cacheOffByEnv reports whether [CacheEnv] turns the cache off.
func cacheOffByEnv() bool {
	switch strings.ToLower(os.Getenv(CacheEnv)) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

// CacheResult says how the run cache served a workflow delivery.
type CacheResult string

// Cache results.
const (
	// CacheHit: the delivery resumed the run's cached execution.
	CacheHit CacheResult = "hit"
	// CacheMiss: no execution was cached for the run; the delivery replayed it.
	CacheMiss CacheResult = "miss"
	// CacheStale: the cached execution was behind the log (another process
	// advanced the run) or the delivery was a redelivery; it was discarded and
	// the delivery replayed the run.
	CacheStale CacheResult = "stale"
	// CacheOff: the client has no run cache; the delivery replayed the run.
	CacheOff CacheResult = "off"
)

// EvictReason says why the run cache let go of a run.
type EvictReason string

// Eviction reasons.
const (
	EvictMaxRuns  EvictReason = "max_runs"  // the cache held MaxRuns runs
	EvictMaxBytes EvictReason = "max_bytes" // the cache held MaxBytes
	EvictIdle     EvictReason = "idle"      // not delivered for IdleTTL
	EvictReplaced EvictReason = "replaced"  // a newer execution of the run was cached
	EvictDropped  EvictReason = "dropped"   // the run was cancelled or finished elsewhere, or deleted; or the cache was flushed
)

// CacheObserver is implemented by an [Observer] that also wants the run cache's
// events. CacheLookup is called once per workflow delivery, with the delivery's
// context, before the workflow code runs; CacheEvicted whenever the cache lets go
// of a run, possibly from a delivery of another run. Neither may block.
type CacheObserver interface {
	CacheLookup(ctx context.Context, info Info, result CacheResult)
	CacheEvicted(info Info, reason EvictReason)
}

// CacheStats is a snapshot of a client's run cache.
type CacheStats struct {
	// Runs and Bytes are what the cache holds now (Bytes is an estimate).
	Runs  int
	Bytes int64
	// Hits, Misses and Stale count workflow deliveries by [CacheResult].
	Hits, Misses, Stale int64
	// Evictions counts runs let go of for any [EvictReason].
	Evictions int64
}

// runCache holds parked executions by run ID, least recently used last. An
// execution taken out of the cache belongs to the delivery that took it until it
// is put back, so at most one goroutine drives it.
type runCache struct {
	maxRuns  int
	maxBytes int64
	ttl      time.Duration
	clock    func() time.Time
	obs      CacheObserver // nil: none

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *cacheEntry, most recently used first
	bytes   int64

	hits, misses, stale, evictions atomic.Int64
}

type cacheEntry struct {
	runID string
	world worlds.World
	x     *execution
	bytes int64
	used  time.Time
}

func newRunCache(cfg CacheConfig, clock func() time.Time, obs Observer) *runCache {
	c := &runCache{maxRuns: cfg.MaxRuns, maxBytes: cfg.MaxBytes, ttl: cfg.IdleTTL, clock: clock,
		entries: map[string]*list.Element{}}
	if c.maxRuns == 0 {
		c.maxRuns = DefaultCacheMaxRuns
	}
	if c.maxBytes == 0 {
		c.maxBytes = DefaultCacheMaxBytes
	}
	if c.ttl == 0 {
		c.ttl = DefaultCacheIdleTTL
	}
	c.obs, _ = obs.(CacheObserver)
	return c
}

type victim struct {
	e      *cacheEntry
	reason EvictReason
}

// take removes the run's execution from the cache and returns it, or nil.
func (c *runCache) take(runID string, w worlds.World) *execution {
	c.mu.Lock()
	el := c.entries[runID]
	var out *execution
	var vs []victim
	if el != nil {
		ent := c.unlink(el)
		if sameWorld(ent.world, w) {
			out = ent.x
		} else {
			vs = append(vs, victim{ent, EvictReplaced})
		}
	}
	vs = c.expire(vs)
	c.mu.Unlock()
	c.end(vs)
	return out
}

// put caches the parked execution x of a run, evicting what the limits require.
// An execution that ended, or is too large on its own, is not kept.
func (c *runCache) put(runID string, w worlds.World, x *execution) {
	if !x.isParked() {
		return
	}
	ent := &cacheEntry{runID: runID, world: w, x: x, bytes: cacheEntryOverhead + x.hist.bytes, used: c.clock()}
	if ent.bytes > c.maxBytes {
		c.end([]victim{{ent, EvictMaxBytes}})
		return
	}
	c.mu.Lock()
	var vs []victim
	if el := c.entries[runID]; el != nil {
		vs = append(vs, victim{c.unlink(el), EvictReplaced})
	}
	c.entries[runID] = c.lru.PushFront(ent)
	c.bytes += ent.bytes
	for c.lru.Len() > c.maxRuns {
		vs = append(vs, victim{c.unlink(c.lru.Back()), EvictMaxRuns})
	}
	for c.bytes > c.maxBytes {
		vs = append(vs, victim{c.unlink(c.lru.Back()), EvictMaxBytes})
	}
	vs = c.expire(vs)
	c.mu.Unlock()
	c.end(vs)
}

// restore puts back an execution a query took out, unless a delivery has
// cached a newer one of the run meanwhile: that one wins, and x ends.
func (c *runCache) restore(runID string, w worlds.World, x *execution) {
	c.mu.Lock()
	_, newer := c.entries[runID]
	c.mu.Unlock()
	if newer {
		c.discard(x, EvictReplaced)
		return
	}
	c.put(runID, w, x)
}

// step returns the function of a step the cached execution of a run queued, so a
// step delivery need not replay the run to find it; nil when not cached.
func (c *runCache) step(runID string, w worlds.World, stepID string) *captured {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.entries[runID]
	if el == nil {
		return nil
	}
	ent := el.Value.(*cacheEntry)
	if !sameWorld(ent.world, w) {
		return nil
	}
	return ent.x.fns[stepID]
}

// discard ends an execution taken out of the cache, counting it as evicted.
func (c *runCache) discard(x *execution, reason EvictReason) {
	c.end([]victim{{&cacheEntry{runID: x.runID, x: x}, reason}})
}

// drop ends the run's cached execution, if any.
func (c *runCache) drop(runID string) {
	c.mu.Lock()
	var vs []victim
	if el := c.entries[runID]; el != nil {
		vs = append(vs, victim{c.unlink(el), EvictDropped})
	}
	c.mu.Unlock()
	c.end(vs)
}

// flush ends every cached execution.
func (c *runCache) flush() {
	c.mu.Lock()
	var vs []victim
	for c.lru.Len() > 0 {
		vs = append(vs, victim{c.unlink(c.lru.Back()), EvictDropped})
	}
	c.mu.Unlock()
	c.end(vs)
}

func (c *runCache) stats() CacheStats {
	c.mu.Lock()
	s := CacheStats{Runs: c.lru.Len(), Bytes: c.bytes}
	c.mu.Unlock()
	s.Hits, s.Misses, s.Stale, s.Evictions = c.hits.Load(), c.misses.Load(), c.stale.Load(), c.evictions.Load()
	return s
}

// expire unlinks the entries idle for longer than the TTL. c.mu is held.
func (c *runCache) expire(vs []victim) []victim {
	deadline := c.clock().Add(-c.ttl)
	for el := c.lru.Back(); el != nil; el = c.lru.Back() {
		if !el.Value.(*cacheEntry).used.Before(deadline) {
			break
		}
		vs = append(vs, victim{c.unlink(el), EvictIdle})
	}
	return vs
}

// unlink removes an entry from the cache. c.mu is held.
func (c *runCache) unlink(el *list.Element) *cacheEntry {
	ent := c.lru.Remove(el).(*cacheEntry)
	delete(c.entries, ent.runID)
	c.bytes -= ent.bytes
	return ent
}

// end aborts the victims' executions, outside c.mu: their deferred functions run.
func (c *runCache) end(vs []victim) {
	for _, v := range vs {
		v.e.x.abort()
		c.evictions.Add(1)
		if c.obs != nil {
			c.obs.CacheEvicted(Info{RunID: v.e.runID, WorkflowName: v.e.x.wfName}, v.reason)
		}
	}
}

// lookup counts and reports how a workflow delivery was served.
func (c *runCache) lookup(ctx context.Context, obs Observer, info Info, r CacheResult) {
	if c != nil {
		switch r {
		case CacheHit:
			c.hits.Add(1)
		case CacheMiss:
			c.misses.Add(1)
		case CacheStale:
			c.stale.Add(1)
		}
	}
	if co, ok := obs.(CacheObserver); ok {
		co.CacheLookup(ctx, info, r)
	}
}

// sameWorld reports whether a and b are the same World; Worlds of a type that
// cannot be compared never are. A World that wraps or stands in for another
// (a tracing wrapper, the embedded World's eager start) says so with Unwrap.
func sameWorld(a, b worlds.World) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	a, b = unwrapWorld(a), unwrapWorld(b)
	return a != nil && a == b
}

// unwrapWorld follows Unwrap down to the World that stores the runs.
func unwrapWorld(w worlds.World) worlds.World {
	type unwrapper interface{ Unwrap() worlds.World }
	for range 8 {
		u, ok := w.(unwrapper)
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	return w
}
