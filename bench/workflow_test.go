package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// TestWorkflowSmoke runs one 3-step run on each library, so the benchmark's
// wiring is checked by plain `go test`.
func TestWorkflowSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Run("cairn", func(t *testing.T) {
		c, err := startCairn(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.run(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		// Start appends run_created and queues; each step appends at least
		// step_created/started/completed: at least one write per step.
		if w := c.world.writes(); w < Steps {
			t.Fatalf("%d World writes for a %d-step run", w, Steps)
		}
	})
	t.Run("go-workflows", func(t *testing.T) {
		g, err := startGoWorkflows(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.run(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := g.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func reportRuns(b *testing.B, elapsed time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
}

// BenchmarkWorkflow_Cairn: one op is one 3-step run started and awaited on the
// embedded World (SQLite file), Starters runs in flight, Workers workers.
func BenchmarkWorkflow_Cairn(b *testing.B) {
	b.ReportAllocs()
	c, err := startCairn(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	baseA, baseQ := c.world.appends.Load(), c.world.queues.Load()
	b.ResetTimer()
	start := time.Now()
	err = c.run(context.Background(), b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.stop(); err != nil {
		b.Fatal(err)
	}
	reportRuns(b, elapsed)
	steps := float64(b.N * Steps)
	appends, queues := float64(c.world.appends.Load()-baseA), float64(c.world.queues.Load()-baseQ)
	b.ReportMetric((appends+queues)/steps, "writes/step")
	b.ReportMetric(appends/steps, "appends/step")
	b.ReportMetric(queues/steps, "queues/step")
}

// BenchmarkSignal_Cairn: b.N signals sent to one running run, which reads
// them all. writes/signal counts every World write from the first signal to
// the run's end, the run's own (its wake-ups, its completion) included.
func BenchmarkSignal_Cairn(b *testing.B) {
	b.ReportAllocs()
	c, err := startCairn(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run, err := workflow.Start(ctx, c.client, Inbox{}, b.N)
	if err != nil {
		b.Fatal(err)
	}
	for st, _ := run.Status(ctx); st != worlds.RunRunning; st, _ = run.Status(ctx) {
		time.Sleep(time.Millisecond)
	}
	base := c.world.writes()
	b.ResetTimer()
	for i := range b.N {
		if err := workflow.Signal(ctx, c.client, run.ID(), "msg", i); err != nil {
			b.Fatal(err)
		}
	}
	sum, err := run.Result(ctx)
	b.StopTimer()
	if want := b.N * (b.N - 1) / 2; err != nil || sum != want {
		b.Fatalf("Result = %d, %v; want %d", sum, err, want)
	}
	writes := float64(c.world.writes() - base)
	if err := c.stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(writes/float64(b.N), "writes/signal")
}

// BenchmarkWorkflow_GoWorkflows: the same work on go-workflows' SQLite backend.
func BenchmarkWorkflow_GoWorkflows(b *testing.B) {
	b.ReportAllocs()
	g, err := startGoWorkflows(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	err = g.run(context.Background(), b.N)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if err := g.stop(); err != nil {
		b.Fatal(err)
	}
	reportRuns(b, elapsed)
}

// chainLengths are the run lengths of the long-run benchmark.
var chainLengths = []int{100, 400, 1600}

// BenchmarkLongRun: one op is one run of n sequential steps (activities),
// started and awaited alone, on cairn's embedded World and on go-workflows'
// SQLite backend in one benchmark run. It reports the time, allocations and,
// for cairn, World writes per step: a runtime whose per-step cost grows with
// the run's length shows it as ns/step rising with n.
func BenchmarkLongRun(b *testing.B) {
	for _, n := range chainLengths {
		b.Run(fmt.Sprintf("cairn/n=%d", n), func(b *testing.B) {
			c, err := startCairn(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			baseA, baseQ := c.world.appends.Load(), c.world.queues.Load()
			measure(b, n, func(ctx context.Context, i int) error { return c.chain(ctx, n) })
			st := c.client.CacheStats()
			if err := c.stop(); err != nil {
				b.Fatal(err)
			}
			steps := float64(b.N * n)
			b.ReportMetric(float64(c.world.appends.Load()-baseA+c.world.queues.Load()-baseQ)/steps, "writes/step")
			b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses+st.Stale), "cache-hit-ratio")
		})
		b.Run(fmt.Sprintf("go-workflows/n=%d", n), func(b *testing.B) {
			g, err := startGoWorkflows(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			measure(b, n, func(ctx context.Context, i int) error { return g.chain(ctx, fmt.Sprintf("chain-%d", i), n) })
			if err := g.stop(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// measure runs op b.N times in sequence and reports ns/step, allocs/step and
// B/step for runs of n steps.
func measure(b *testing.B, n int, op func(ctx context.Context, i int) error) {
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := op(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	runtime.ReadMemStats(&after)
	steps := float64(b.N * n)
	b.ReportMetric(float64(elapsed.Nanoseconds())/steps, "ns/step")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/steps, "allocs/step")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/steps, "B/step")
}

// suspendedRuns is how many runs BenchmarkCachedRunsHeap holds suspended.
const suspendedRuns = 10_000

// cacheBytes is the run cache bound BenchmarkCachedRunsHeap configures.
const cacheBytes = 256 << 20

// BenchmarkCachedRunsHeap holds suspendedRuns runs of Parked (one step done,
// waiting on a hook) in the run cache of one client and reports the heap and
// goroutine stacks they take: measured as the difference before and after the
// cache is flushed, each after a GC, so the World's own memory is left out.
// The run is one op whatever b.N is (use -benchtime 1x).
func BenchmarkCachedRunsHeap(b *testing.B) {
	c, err := startCairnWith(b.TempDir(), workflow.CacheConfig{MaxRuns: suspendedRuns, MaxBytes: cacheBytes, IdleTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.stop(); err != nil {
			b.Fatal(err)
		}
	}()
	ctx := context.Background()
	err = drive(ctx, suspendedRuns, func(ctx context.Context, i int) error {
		_, err := workflow.Start(ctx, c.client, Parked{}, fmt.Sprintf("parked-%d", i))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for c.client.CacheStats().Runs < suspendedRuns {
		if time.Now().After(deadline) {
			b.Fatalf("runs cached: %+v", c.client.CacheStats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := c.client.CacheStats()
	held := readMem()
	c.client.FlushCache()
	freed := readMem()
	heap := float64(held.HeapAlloc) - float64(freed.HeapAlloc)
	stack := float64(held.StackInuse) - float64(freed.StackInuse)
	b.ReportMetric(heap/(1<<20), "heap-MiB")
	b.ReportMetric(stack/(1<<20), "stack-MiB")
	b.ReportMetric((heap+stack)/suspendedRuns, "B/run")
	b.ReportMetric(float64(st.Bytes)/(1<<20), "estimate-MiB")
	b.ReportMetric(float64(cacheBytes)/(1<<20), "limit-MiB")
	if st.Runs != suspendedRuns || st.Bytes > cacheBytes || heap+stack > cacheBytes {
		b.Fatalf("cache %+v: heap %.0f + stacks %.0f bytes for %d runs, limit %d", st, heap, stack, suspendedRuns, cacheBytes)
	}
}

func readMem() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
