package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// Inbox receives payloads on a hook and runs a step after each, so every payload
// is one delivery that resumes (or replays) the run. It counts how often its Run
// starts, which only replays do.
type Inbox struct {
	starts *atomic.Int32
	// panicAt panics in the workflow code after that many payloads (0: never).
	panicAt int
}

type inboxIn struct {
	Token string
	N     int
}

func (w Inbox) Run(ctx workflow.Context, in inboxIn) (string, error) {
	w.starts.Add(1)
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: in.Token})
	if err != nil {
		return "", err
	}
	var parts []string
	for i := range in.N {
		v, err := h.Receive(ctx)
		if err != nil {
			return "", err
		}
		if w.panicAt > 0 && i+1 == w.panicAt {
			panic("inbox: payload " + v)
		}
		up, err := workflow.Step(ctx, "upper", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil }, v)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s@%d", up, workflow.Now(ctx).Unix()*0))
	}
	return strings.Join(parts, ","), nil
}

// drain runs due deliveries with r until none is left.
func drain(t *testing.T, w *memworld.World, r worlds.Runner) {
	t.Helper()
	for i := 0; i < 100; i++ {
		n, errs := w.RunOne(context.Background(), r)
		if len(errs) > 0 {
			t.Fatalf("deliveries failed: %v", errs)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("deliveries never drained")
}

func newCachedClient(t *testing.T, w worlds.World, cfg workflow.Config) *workflow.Client {
	t.Helper()
	cfg.World = w
	c, err := workflow.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.FlushCache)
	return c
}

// A run's deliveries after the first resume its cached execution: the workflow
// function starts once, each delivery is a hit, and the result is the one a
// client without cache computes.
func TestCacheResumesInsteadOfReplaying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	results := map[bool]string{}
	for _, cached := range []bool{true, false} {
		w := memworld.New()
		starts := new(atomic.Int32)
		wf := Inbox{starts: starts}
		c := newCachedClient(t, w, workflow.Config{Cache: workflow.CacheConfig{Disabled: !cached}})
		r := c.Runner(workflow.Use(wf))
		token := fmt.Sprintf("inbox-%t", cached)
		run, err := workflow.Start(ctx, c, wf, inboxIn{Token: token, N: 3})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, w, r)
		for _, p := range []string{"a", "b", "c"} {
			if _, err := workflow.ResumeHook(ctx, c, token, p); err != nil {
				t.Fatal(err)
			}
			drain(t, w, r)
		}
		out, err := workflow.Attach[string](c, run.ID()).Result(resultCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		results[cached] = out
		st := c.CacheStats()
		if cached && (starts.Load() != 1 || st.Hits != 3 || st.Misses != 1 || st.Runs != 0) {
			t.Fatalf("cached: Run started %d times, stats %+v; want 1 start, 3 hits, 1 miss, nothing left cached", starts.Load(), st)
		}
		if !cached && (starts.Load() != 4 || st != (workflow.CacheStats{})) {
			t.Fatalf("uncached: Run started %d times, stats %+v; want 4 starts, zero stats", starts.Load(), st)
		}
	}
	if results[true] != results[false] || results[true] != "A@0,B@0,C@0" {
		t.Fatalf("results: cached %q, uncached %q", results[true], results[false])
	}
}

// An entry another process advanced the run past (here a second client on the
// same World) is detected from the events it did not append, discarded, and the
// run replayed to the right result.
func TestCacheStaleEntryIsDiscarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := memworld.New()
	starts := new(atomic.Int32)
	wf := Inbox{starts: starts}
	a := newCachedClient(t, w, workflow.Config{})
	b := newCachedClient(t, w, workflow.Config{})
	ra, rb := a.Runner(workflow.Use(wf)), b.Runner(workflow.Use(wf))
	run, err := workflow.Start(ctx, a, wf, inboxIn{Token: "stale", N: 2})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, w, ra) // A caches the run, suspended in Receive
	if st := a.CacheStats(); st.Runs != 1 {
		t.Fatalf("A: %+v, want the run cached", st)
	}
	if _, err := workflow.ResumeHook(ctx, a, "stale", "x"); err != nil {
		t.Fatal(err)
	}
	drain(t, w, rb) // B replays, runs the step, suspends again: A's entry is behind
	if _, err := workflow.ResumeHook(ctx, a, "stale", "y"); err != nil {
		t.Fatal(err)
	}
	drain(t, w, ra)
	out, err := workflow.Attach[string](a, run.ID()).Result(resultCtx(t))
	if err != nil || out != "X@0,Y@0" {
		t.Fatalf("Result = %q, %v", out, err)
	}
	if st := a.CacheStats(); st.Stale != 1 || st.Hits != 0 {
		t.Fatalf("A: %+v, want one stale entry and no hit", st)
	}
	if n := starts.Load(); n != 3 {
		t.Fatalf("Run started %d times, want 3 (A, B, A's replay)", n)
	}
}

// The cache never holds more than its limits, with 1,000 runs suspended at once;
// evicted runs replay and every run completes.
func TestCacheLimitsWithManyRuns(t *testing.T) {
	t.Parallel()
	const runs = 1000
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  workflow.CacheConfig
	}{
		{"max runs", workflow.CacheConfig{MaxRuns: 100}},
		{"max bytes", workflow.CacheConfig{MaxBytes: 2 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := memworld.New()
			starts := new(atomic.Int32)
			wf := Inbox{starts: starts}
			var peak atomic.Int64
			c := newCachedClient(t, w, workflow.Config{Cache: tc.cfg})
			check := func() {
				st := c.CacheStats()
				if (tc.cfg.MaxRuns > 0 && st.Runs > tc.cfg.MaxRuns) || (tc.cfg.MaxBytes > 0 && st.Bytes > tc.cfg.MaxBytes) {
					t.Errorf("cache over its limits: %+v", st)
				}
				peak.Store(max(peak.Load(), int64(st.Runs)))
			}
			r := checkingRunner{Runner: c.Runner(workflow.Use(wf)), check: check}
			sctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = w.Serve(sctx, r) }()
			defer func() { cancel(); <-done }()
			var wg sync.WaitGroup
			ids := make([]string, runs)
			for i := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					token := fmt.Sprintf("%s-%d", tc.name, i)
					run, err := workflow.Start(ctx, c, wf, inboxIn{Token: token, N: 2})
					if err != nil {
						t.Error(err)
						return
					}
					ids[i] = run.ID()
					if err := resumeInbox(ctx, c, token); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			for _, id := range ids {
				if out, err := workflow.Attach[string](c, id).Result(resultCtx(t)); err != nil || out != "P@0,Q@0" {
					t.Fatalf("run %s: %q, %v", id, out, err)
				}
			}
			check()
			st := c.CacheStats()
			if st.Evictions == 0 || peak.Load() == 0 {
				t.Fatalf("stats %+v, peak %d runs: want evictions", st, peak.Load())
			}
			// With a thousand runs in flight, every run may be evicted between
			// two of its deliveries, so hits are only certain once the load is
			// gone: one more run, alone, resumes from its cached execution.
			token := tc.name + "-alone"
			run, err := workflow.Start(ctx, c, wf, inboxIn{Token: token, N: 2})
			if err != nil {
				t.Fatal(err)
			}
			if err := resumeInbox(ctx, c, token); err != nil {
				t.Fatal(err)
			}
			if out, err := workflow.Attach[string](c, run.ID()).Result(resultCtx(t)); err != nil || out != "P@0,Q@0" {
				t.Fatalf("run %s: %q, %v", run.ID(), out, err)
			}
			if after := c.CacheStats(); after.Hits <= st.Hits {
				t.Fatalf("stats %+v after a run alone, %+v before: want hits", after, st)
			}
		})
	}
}

// resumeInbox resumes an Inbox run's hooks p and q, each once it exists.
func resumeInbox(ctx context.Context, c *workflow.Client, token string) error {
	for _, p := range []string{"p", "q"} {
		for {
			_, err := workflow.ResumeHook(ctx, c, token, p)
			if err == nil {
				break
			}
			if !errors.Is(err, worlds.ErrHookNotFound) {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// checkingRunner calls check after every delivery.
type checkingRunner struct {
	worlds.Runner
	check func()
}

func (r checkingRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	defer r.check()
	return r.Runner.Run(ctx, w, d)
}

// A cancelled run leaves the cache once its cached execution has seen the
// cancellation and ended; a run idle for longer than the TTL is evicted as the
// cache is next used.
func TestCacheDropsCancelledAndIdleRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := memworld.New()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	wf := Inbox{starts: new(atomic.Int32)}
	c := newCachedClient(t, w, workflow.Config{Clock: clock, Cache: workflow.CacheConfig{IdleTTL: time.Minute}})
	r := c.Runner(workflow.Use(wf))
	start := func(token string) *workflow.Run[string] {
		run, err := workflow.Start(ctx, c, wf, inboxIn{Token: token, N: 1})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, w, r)
		return run
	}
	first := start("cancelled")
	if st := c.CacheStats(); st.Runs != 1 {
		t.Fatalf("%+v, want one run cached", st)
	}
	if err := first.Cancel(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	// The cancel's delivery resumes the cached execution, whose code sees the
	// cancellation and returns; the ended run leaves the cache.
	drain(t, w, r)
	if st := c.CacheStats(); st.Runs != 0 || st.Hits != 1 {
		t.Fatalf("after cancel: %+v, want nothing cached after one hit", st)
	}
	if st, err := first.Status(ctx); err != nil || st != worlds.RunCancelled {
		t.Fatalf("status after cancel = %s, %v", st, err)
	}
	start("idle")
	now.Add(int64(2 * time.Minute))
	start("fresh") // putting it evicts the idle one
	if st := c.CacheStats(); st.Runs != 1 || st.Evictions != 1 {
		t.Fatalf("after TTL: %+v, want only the fresh run cached, one eviction", st)
	}
}

// A workflow that panics after a cache hit fails the run (under FailOnCodeError)
// as it does when replayed.
func testPanicAfterResume(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{CodeErrors: workflow.FailOnCodeError}, workflow.Use(Inbox{starts: new(atomic.Int32), panicAt: 2}))
	ctx := resultCtx(t)
	run, err := workflow.Start(ctx, h.c, Inbox{}, inboxIn{Token: "panic-" + t.Name(), N: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"one", "two"} {
		waitForHook(t, w, "panic-"+t.Name())
		for {
			if _, err := workflow.ResumeHook(ctx, h.c, "panic-"+t.Name(), p); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	_, err = run.Result(ctx)
	var re *workflow.RunError
	if !errors.As(err, &re) || re.Info.Type != "panic" || !re.Info.Fatal || !strings.Contains(re.Info.Message, "inbox: payload two") {
		t.Fatalf("Result error = %#v, want the panic recorded as a fatal run failure", err)
	}
}

// LongChain runs more sequential steps than one delivery runs inline, so the run
// is handed to fresh deliveries on the way.
type LongChain struct{}

func (LongChain) Run(ctx workflow.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = workflow.Step(ctx, "inc", func(_ context.Context, v int) (int, error) { return v + 1, nil }, v); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// A chain longer than one delivery's inline budget completes without a failed
// delivery: each hand-off resumes the cached execution (a redelivery would show
// as a stale lookup).
func testLongChain(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	h := serve(t, newWorld(t), workflow.Config{}, workflow.Use(LongChain{}))
	ctx := resultCtx(t)
	run, err := workflow.Start(ctx, h.c, LongChain{}, 150)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(ctx); err != nil || out != 150 {
		t.Fatalf("Result = %d, %v", out, err)
	}
	st := h.c.CacheStats()
	if cacheOff(t) && st != (workflow.CacheStats{}) {
		t.Fatalf("cache stats %+v without a cache", st)
	}
	if !cacheOff(t) && (st.Stale != 0 || st.Hits < 2) {
		t.Fatalf("cache stats %+v: want no stale lookup and a hit per hand-off", st)
	}
}

// Pair runs two steps in parallel, each in a step delivery of its own.
type Pair struct{ starts *atomic.Int32 }

func (w Pair) Run(ctx workflow.Context, n int) (int, error) {
	w.starts.Add(1)
	double := func(_ context.Context, v int) (int, error) { return 2 * v, nil }
	a := workflow.Go(ctx, "left", double, n)
	b := workflow.Go(ctx, "right", double, n+1)
	x, err := a.Get(ctx)
	if err != nil {
		return 0, err
	}
	y, err := b.Get(ctx)
	return x + y, err
}

// A step delivery of a cached run takes the step's function from the cached
// execution instead of replaying the workflow up to the step.
func TestCacheServesStepDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cached := range []bool{true, false} {
		w := memworld.New()
		starts := new(atomic.Int32)
		wf := Pair{starts: starts}
		c := newCachedClient(t, w, workflow.Config{Cache: workflow.CacheConfig{Disabled: !cached}})
		run, err := workflow.Start(ctx, c, wf, 5)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, w, c.Runner(workflow.Use(wf)))
		if out, err := workflow.Attach[int](c, run.ID()).Result(resultCtx(t)); err != nil || out != 22 {
			t.Fatalf("cached=%t: Result = %d, %v", cached, out, err)
		}
		// Without the cache: the first delivery, one replay per step delivery and
		// one per workflow delivery after them.
		if got := starts.Load(); (cached && got != 1) || (!cached && got < 4) {
			t.Fatalf("cached=%t: Run started %d times", cached, got)
		}
	}
}

// The environment variable CacheEnv turns the cache off whatever Config says;
// any other value leaves it on. Config validation names the bad field.
func TestCacheConfig(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		env    string
		cached bool
	}{{"off", false}, {"0", false}, {"on", true}, {"", true}} {
		t.Setenv(workflow.CacheEnv, tc.env)
		w := memworld.New()
		wf := Inbox{starts: new(atomic.Int32)}
		c := newCachedClient(t, w, workflow.Config{})
		if _, err := workflow.Start(ctx, c, wf, inboxIn{Token: "env-" + tc.env, N: 1}); err != nil {
			t.Fatal(err)
		}
		drain(t, w, c.Runner(workflow.Use(wf)))
		if st := c.CacheStats(); (st.Runs == 1) != tc.cached {
			t.Fatalf("%s=%q: cache stats %+v", workflow.CacheEnv, tc.env, st)
		}
	}
	for _, cfg := range []workflow.CacheConfig{{MaxRuns: -1}, {MaxBytes: -1}, {IdleTTL: -time.Second}} {
		_, err := workflow.NewClient(workflow.Config{World: memworld.New(), Cache: cfg})
		var ce *workflow.ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, "Config.Cache.") {
			t.Errorf("%+v: err = %v, want a ConfigError naming the field", cfg, err)
		}
	}
}

// goneWorld answers for deleted runs as a World does once a run expired.
type goneWorld struct {
	worlds.World
	gone sync.Map // run ID → true
}

func (g *goneWorld) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	if _, ok := g.gone.Load(runID); ok {
		return worlds.Run{}, worlds.ErrRunNotFound
	}
	return g.World.GetRun(ctx, runID)
}

func (g *goneWorld) ListEvents(ctx context.Context, runID string, f worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	if _, ok := g.gone.Load(runID); ok {
		return worlds.Page[worlds.Event]{}, worlds.ErrRunNotFound
	}
	return g.World.ListEvents(ctx, runID, f)
}

// A cached run deleted meanwhile (its retention ended after another process
// finished it, or it was deleted) is dropped by the next delivery that finds it
// gone; a run cancelled by another process is resumed from the cache by the
// next delivery, which hands its code the cancellation, and leaves it ended.
func TestCacheDropsDeletedAndCancelledElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mw := memworld.New()
	w := &goneWorld{World: mw}
	wf := Inbox{starts: new(atomic.Int32)}
	c := newCachedClient(t, w, workflow.Config{})
	other := newCachedClient(t, mw, workflow.Config{})
	r := worldRunner{inner: c.Runner(workflow.Use(wf)), world: w}
	deleted, err := workflow.Start(ctx, c, wf, inboxIn{Token: "deleted", N: 1})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := workflow.Start(ctx, c, wf, inboxIn{Token: "cancelled", N: 1})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, mw, r)
	if st := c.CacheStats(); st.Runs != 2 {
		t.Fatalf("%+v, want both runs cached", st)
	}
	w.gone.Store(deleted.ID(), true)
	if err := other.Cancel(ctx, cancelled.ID(), "elsewhere"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{deleted.ID(), cancelled.ID()} {
		if _, err := mw.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: worlds.WorkflowName[Inbox](), RunID: id}, worlds.QueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, mw, r)
	if st := c.CacheStats(); st.Runs != 0 || st.Hits != 1 || st.Evictions != 1 {
		t.Fatalf("after a delivery of each: %+v, want nothing cached, the deleted run evicted and the cancelled one resumed (a hit) to end", st)
	}
	if run, err := mw.GetRun(ctx, cancelled.ID()); err != nil || run.Status != worlds.RunCancelled || run.CancelReason != "elsewhere" {
		t.Fatalf("run cancelled elsewhere = %+v, %v", run, err)
	}
}
