package middleware

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsOption configures Metrics and DLQCounter.
type MetricsOption func(*metricsConfig)

type metricsConfig struct{ reg prometheus.Registerer }

// WithMetricsRegisterer registers the collectors on r instead of
// prometheus.DefaultRegisterer. A nil r is ignored.
func WithMetricsRegisterer(r prometheus.Registerer) MetricsOption {
	return func(c *metricsConfig) {
		if r != nil {
			c.reg = r
		}
	}
}

// Metric names, all labeled by route.
const (
	MetricReceived   = "loafer_messages_received_total"
	MetricProcessed  = "loafer_messages_processed_total"
	MetricErrors     = "loafer_messages_errors_total"
	MetricDuration   = "loafer_message_processing_duration_seconds"
	MetricInflight   = "loafer_messages_inflight"
	MetricDeadLetter = "loafer_messages_dlq_total"
)

func metricsCfg(opts []MetricsOption) metricsConfig {
	c := metricsConfig{reg: prometheus.DefaultRegisterer}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// register registers c, or returns the collector already registered under
// the same description so several routes share one metric family.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// An incompatible collector owns the name: keep counting on the
		// unregistered collector rather than failing message processing.
	}
	return c
}

// Metrics records Prometheus counters, a duration histogram and an inflight
// gauge for routeName: loafer_messages_received_total,
// loafer_messages_processed_total{status="success"|"error"},
// loafer_messages_errors_total, loafer_message_processing_duration_seconds
// and loafer_messages_inflight. It also registers loafer_messages_dlq_total,
// which DLQCounter counts.
func Metrics(routeName string, opts ...MetricsOption) Middleware {
	cfg := metricsCfg(opts)
	route := []string{"route"}
	received := register(cfg.reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricReceived, Help: "Total messages received",
	}, route)).WithLabelValues(routeName)
	processed := register(cfg.reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricProcessed, Help: "Total messages processed",
	}, []string{"route", "status"}))
	ok, failed := processed.WithLabelValues(routeName, "success"), processed.WithLabelValues(routeName, "error")
	errorsTotal := register(cfg.reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricErrors, Help: "Total message processing errors",
	}, route)).WithLabelValues(routeName)
	duration := register(cfg.reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: MetricDuration, Help: "Message processing duration", Buckets: prometheus.DefBuckets,
	}, route)).WithLabelValues(routeName)
	inflight := register(cfg.reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricInflight, Help: "Messages currently being processed",
	}, route)).WithLabelValues(routeName)
	// Registered, not counted, here: the consumer counts it through
	// DLQCounter, and dashboards expect the family to exist from the start,
	// as loafer-awsx registers it.
	dlqCounter(cfg.reg)

	return func(next Handler) Handler {
		return func(ctx context.Context, msg Message) (err error) {
			received.Inc()
			inflight.Inc()
			start := time.Now()
			returned := false
			// Deferred so a panic (recovered by an outer Recovery) still
			// lowers inflight and counts as an error with its duration.
			defer func() {
				duration.Observe(time.Since(start).Seconds())
				inflight.Dec()
				if !returned || err != nil {
					failed.Inc()
					errorsTotal.Inc()
					return
				}
				ok.Inc()
			}()
			err = next(ctx, msg)
			returned = true
			return err
		}
	}
}

// DLQCounter returns a function incrementing loafer_messages_dlq_total for a
// route; pass it to consumer.WithDLQMetric or broker.WithDLQMetric.
func DLQCounter(opts ...MetricsOption) func(routeName string) {
	c := dlqCounter(metricsCfg(opts).reg)
	return func(routeName string) { c.WithLabelValues(routeName).Inc() }
}

func dlqCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricDeadLetter, Help: "Total messages observed as exhausted (receive count reached maxReceiveCount; redriven by AWS SQS)",
	}, []string{"route"}))
}
