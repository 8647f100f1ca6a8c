package workflowprom

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// Options configure [New].
type Options struct {
	// Registerer receives the collectors. Required; use prometheus.NewRegistry()
	// in tests and prometheus.DefaultRegisterer to serve them with promhttp.
	Registerer prometheus.Registerer
	// Clock measures queue lag; nil means time.Now.
	Clock func() time.Time
	// Buckets for the duration and lag histograms; nil means prometheus.DefBuckets.
	Buckets []float64
}

// Metrics implements [workflow.Observer] and wraps Runners to measure queue lag.
type Metrics struct {
	workflow.NopObserver
	clock        func() time.Time
	runsStarted  *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	attempts     *prometheus.CounterVec
	stepsDone    *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	lag          *prometheus.HistogramVec
	deliveries   *prometheus.CounterVec
	cacheHits    *prometheus.CounterVec
	cacheMisses  *prometheus.CounterVec
	evictions    *prometheus.CounterVec
}

var (
	_ workflow.Observer      = (*Metrics)(nil)
	_ workflow.CacheObserver = (*Metrics)(nil)
)

// New registers the collectors and returns the Metrics; registering twice on one
// Registerer fails with the registry's AlreadyRegisteredError.
func New(opts Options) (*Metrics, error) {
	if opts.Registerer == nil {
		return nil, fmt.Errorf("workflowprom: Options.Registerer is required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Buckets == nil {
		opts.Buckets = prometheus.DefBuckets
	}
	const ns = "cairn_workflow"
	m := &Metrics{
		clock: opts.Clock,
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_started_total",
			Help: "Runs that began executing."}, []string{"workflow"}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_finished_total",
			Help: "Runs that ended, by final status (completed, failed, cancelled)."}, []string{"workflow", "status"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "step_attempts_total",
			Help: "Live step attempts, by how each ended (completed, retrying, failed)."}, []string{"workflow", "step", "result"}),
		stepsDone: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "steps_finished_total",
			Help: "Logical step outcomes (completed, failed), once per step."}, []string{"workflow", "step", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "step_attempt_duration_seconds",
			Help: "Duration of one live step attempt.", Buckets: opts.Buckets}, []string{"workflow", "step"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "queue_lag_seconds",
			Help: "Delay between a delivery's due time and the start of its execution.", Buckets: opts.Buckets}, []string{"workflow", "kind"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "deliveries_total",
			Help: "Deliveries executed, by outcome (ok, error)."}, []string{"workflow", "kind", "outcome"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_hits_total",
			Help: "Workflow deliveries that resumed the run's cached execution."}, []string{"workflow"}),
		cacheMisses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_misses_total",
			Help: "Workflow deliveries that replayed the run, by why (miss: not cached, stale: cached but behind the log, off: no cache)."}, []string{"workflow", "result"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_evictions_total",
			Help: "Runs the run cache let go of, by reason (max_runs, max_bytes, idle, replaced, dropped)."}, []string{"workflow", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.runsStarted, m.runsFinished, m.attempts, m.stepsDone, m.duration, m.lag, m.deliveries,
		m.cacheHits, m.cacheMisses, m.evictions} {
		if err := opts.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("workflowprom: %w", err)
		}
	}
	return m, nil
}

// RunStarted counts a run start.
func (m *Metrics) RunStarted(ctx context.Context, info workflow.Info) context.Context {
	m.runsStarted.WithLabelValues(info.WorkflowName).Inc()
	return ctx
}

// RunFinished counts a run's end by status.
func (m *Metrics) RunFinished(ctx context.Context, info workflow.Info, status worlds.RunStatus, _ error) context.Context {
	m.runsFinished.WithLabelValues(info.WorkflowName, string(status)).Inc()
	return ctx
}

// StepFinished counts the attempt, its duration and, for a final result, the step.
func (m *Metrics) StepFinished(ctx context.Context, info workflow.Info, out workflow.StepOutcome) context.Context {
	m.attempts.WithLabelValues(info.WorkflowName, info.StepName, string(out.Result)).Inc()
	m.duration.WithLabelValues(info.WorkflowName, info.StepName).Observe(out.Duration.Seconds())
	if out.Result == workflow.StepCompleted || out.Result == workflow.StepFailed {
		m.stepsDone.WithLabelValues(info.WorkflowName, info.StepName, string(out.Result)).Inc()
	}
	return ctx
}

// CacheLookup counts a workflow delivery as a cache hit or, by result, a miss.
func (m *Metrics) CacheLookup(_ context.Context, info workflow.Info, result workflow.CacheResult) {
	if result == workflow.CacheHit {
		m.cacheHits.WithLabelValues(info.WorkflowName).Inc()
		return
	}
	m.cacheMisses.WithLabelValues(info.WorkflowName, string(result)).Inc()
}

// CacheEvicted counts a run the cache let go of, by reason.
func (m *Metrics) CacheEvicted(info workflow.Info, reason workflow.EvictReason) {
	m.evictions.WithLabelValues(info.WorkflowName, string(reason)).Inc()
}

// Runner wraps r to observe queue lag and delivery outcomes.
func (m *Metrics) Runner(r worlds.Runner) worlds.Runner { return &runner{inner: r, m: m} }

type runner struct {
	inner worlds.Runner
	m     *Metrics
}

func (r *runner) Workflows() []string { return r.inner.Workflows() }

// Query forwards a query to the wrapped runner (see [worlds.Querier]), so
// queries reach the workflow's code through the wrapper; it adds nothing.
func (r *runner) Query(ctx context.Context, w worlds.World, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	q, ok := r.inner.(worlds.Querier)
	if !ok {
		return nil, fmt.Errorf("%w: the runner of %q (%T) does not answer queries", worlds.ErrNoRunner, run.WorkflowName, r.inner)
	}
	return q.Query(ctx, w, run, name, arg)
}

func (r *runner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	kind := string(d.Input.Kind)
	if !d.DueAt.IsZero() {
		r.m.lag.WithLabelValues(d.Input.WorkflowName, kind).Observe(max(r.m.clock().Sub(d.DueAt), 0).Seconds())
	}
	err := r.inner.Run(ctx, w, d)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	r.m.deliveries.WithLabelValues(d.Input.WorkflowName, kind, outcome).Inc()
	return err
}
