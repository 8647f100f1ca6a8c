package bench

import (
	"context"
	"testing"
	"time"
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
