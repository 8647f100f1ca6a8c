package workflowprom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowprom"
	"github.com/cairn-go/cairn/worlds/local"
)

type Flow struct{ calls *atomic.Int32 }

func (f Flow) Run(ctx workflow.Context, fail bool) (int, error) {
	a := workflow.Go(ctx, "left", func(context.Context, int) (int, error) { return 1, nil }, 0)
	b := workflow.Go(ctx, "right", func(context.Context, int) (int, error) { return 2, nil }, 0)
	x, _ := a.Get(ctx)
	y, _ := b.Get(ctx)
	if err := workflow.Sleep(ctx, 5*time.Millisecond); err != nil {
		return 0, err
	}
	return workflow.Step(ctx, "flaky", func(context.Context, int) (int, error) {
		if fail {
			return 0, workflow.Fatal(errors.New("declined"))
		}
		if f.calls.Add(1) == 1 {
			return 0, errors.New("transient")
		}
		return x + y, nil
	}, 0, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond, Multiplier: 1}))
}

func (Flow) WorkflowName() string { return "flow" }

func TestMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := workflowprom.New(workflowprom.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflowprom.New(workflowprom.Options{Registerer: reg}); err == nil {
		t.Error("registering twice succeeded")
	}
	world, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- client.Serve(sctx, m.Runner(workflow.Use(Flow{calls: new(atomic.Int32)}))) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	defer stop()

	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	ok, _ := workflow.Start(ctx, client, Flow{}, false)
	if v, err := ok.Result(rctx); err != nil || v != 3 {
		t.Fatal(v, err)
	}
	bad, _ := workflow.Start(ctx, client, Flow{}, true)
	if _, err := bad.Result(rctx); err == nil {
		t.Fatal("failing run succeeded")
	}
	stop()

	want := `
# HELP cairn_workflow_runs_finished_total Runs that ended, by final status (completed, failed, cancelled).
# TYPE cairn_workflow_runs_finished_total counter
cairn_workflow_runs_finished_total{status="completed",workflow="flow"} 1
cairn_workflow_runs_finished_total{status="failed",workflow="flow"} 1
# HELP cairn_workflow_runs_started_total Runs that began executing.
# TYPE cairn_workflow_runs_started_total counter
cairn_workflow_runs_started_total{workflow="flow"} 2
# HELP cairn_workflow_step_attempts_total Live step attempts, by how each ended (completed, retrying, failed).
# TYPE cairn_workflow_step_attempts_total counter
cairn_workflow_step_attempts_total{result="completed",step="flaky",workflow="flow"} 1
cairn_workflow_step_attempts_total{result="completed",step="left",workflow="flow"} 2
cairn_workflow_step_attempts_total{result="completed",step="right",workflow="flow"} 2
cairn_workflow_step_attempts_total{result="failed",step="flaky",workflow="flow"} 1
cairn_workflow_step_attempts_total{result="retrying",step="flaky",workflow="flow"} 1
# HELP cairn_workflow_steps_finished_total Logical step outcomes (completed, failed), once per step.
# TYPE cairn_workflow_steps_finished_total counter
cairn_workflow_steps_finished_total{result="completed",step="flaky",workflow="flow"} 1
cairn_workflow_steps_finished_total{result="completed",step="left",workflow="flow"} 2
cairn_workflow_steps_finished_total{result="completed",step="right",workflow="flow"} 2
cairn_workflow_steps_finished_total{result="failed",step="flaky",workflow="flow"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"cairn_workflow_runs_started_total", "cairn_workflow_runs_finished_total",
		"cairn_workflow_step_attempts_total", "cairn_workflow_steps_finished_total"); err != nil {
		t.Error(err)
	}
	// Seven live attempts (2 left, 2 right, 2 flaky on the good run, 1 on the bad)
	// are in the duration histogram; every delivery is measured for lag.
	if n, err := testutil.GatherAndCount(reg, "cairn_workflow_step_attempt_duration_seconds"); err != nil || n != 3 {
		t.Errorf("duration series = %d, %v", n, err)
	}
	mfs, _ := reg.Gather()
	var attempts, lagCount, deliveries uint64
	var hits, misses float64
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			switch mf.GetName() {
			case "cairn_workflow_cache_hits_total":
				hits += mt.GetCounter().GetValue()
			case "cairn_workflow_cache_misses_total":
				misses += mt.GetCounter().GetValue()
			case "cairn_workflow_step_attempt_duration_seconds":
				attempts += mt.GetHistogram().GetSampleCount()
			case "cairn_workflow_queue_lag_seconds":
				lagCount += mt.GetHistogram().GetSampleCount()
			case "cairn_workflow_deliveries_total":
				deliveries += uint64(mt.GetCounter().GetValue())
			}
		}
	}
	if attempts != 7 {
		t.Errorf("attempt durations observed %d, want 7", attempts)
	}
	if lagCount == 0 || lagCount != deliveries {
		t.Errorf("queue lag observed %d times for %d deliveries", lagCount, deliveries)
	}
	// Each run's first delivery replays; the ones after its steps and its sleep
	// resume it from the cache (unless two arrive at once).
	if misses < 2 || hits < 1 {
		t.Errorf("cache hits %v, misses %v; want at least 1 and 2", hits, misses)
	}
	if st := client.CacheStats(); float64(st.Hits) != hits || float64(st.Misses+st.Stale) != misses {
		t.Errorf("client's cache stats %+v disagree with the metrics: %v hits, %v misses", st, hits, misses)
	}
}
