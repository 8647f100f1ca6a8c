// Package broker runs one consumer per route with shared options and a
// graceful, bounded shutdown.
package broker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Broker orchestrates one consumer.Consumer per route.
type Broker struct {
	consumers []*consumer.Consumer
	log       *slog.Logger
}

type config struct {
	log    *slog.Logger
	global []middleware.Middleware
	extra  []consumer.Option
}

// Option configures a Broker.
type Option func(*config)

// WithLogger sets the logger forwarded to every consumer (default logger.New()).
func WithLogger(log *slog.Logger) Option {
	return func(c *config) {
		if log != nil {
			c.log = log
		}
	}
}

// WithRetryTimeout sets each consumer's wait after a failed receive (default
// 5s). New refuses a non-positive d with an error wrapping
// errors.ErrInvalidOption.
func WithRetryTimeout(d time.Duration) Option {
	return WithConsumerOptions(consumer.WithRetryTimeout(d))
}

// WithShutdownTimeout bounds the drain after the context is canceled
// (default unbounded). New refuses a non-positive d with an error wrapping
// errors.ErrInvalidOption.
func WithShutdownTimeout(d time.Duration) Option {
	return WithConsumerOptions(consumer.WithShutdownTimeout(d))
}

// WithMiddleware adds global middleware, applied outermost on every route.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.global = append(c.global, mws...) }
}

// WithGlobalMiddleware is WithMiddleware under loafer-awsx's name.
func WithGlobalMiddleware(mws ...middleware.Middleware) Option { return WithMiddleware(mws...) }

// WithSchedulerClient forwards the EventBridge Scheduler client to every
// consumer, so Scheduled Retry routes run under the broker.
func WithSchedulerClient(s consumer.SchedulerClient) Option {
	return WithConsumerOptions(consumer.WithSchedulerClient(s))
}

// WithSuccessMetric forwards consumer.WithSuccessMetric.
func WithSuccessMetric(fn func(routeName string)) Option {
	return WithConsumerOptions(consumer.WithSuccessMetric(fn))
}

// WithRetryMetric forwards consumer.WithRetryMetric.
func WithRetryMetric(fn func(routeName string)) Option {
	return WithConsumerOptions(consumer.WithRetryMetric(fn))
}

// WithDeadLetterMetric forwards consumer.WithDeadLetterMetric.
func WithDeadLetterMetric(fn func(routeName string)) Option {
	return WithConsumerOptions(consumer.WithDeadLetterMetric(fn))
}

// WithDLQMetric forwards consumer.WithDLQMetric.
func WithDLQMetric(inc consumer.DLQMetric) Option {
	return WithConsumerOptions(consumer.WithDLQMetric(inc))
}

// WithConsumerOptions forwards any consumer option to every consumer; they
// apply after the broker's own settings.
func WithConsumerOptions(opts ...consumer.Option) Option {
	return func(c *config) { c.extra = append(c.extra, opts...) }
}

// New builds a broker. It returns ErrNoRoute without routes or with a nil
// route and ErrNoSQSClient for a nil client.
func New(sqsClient consumer.SQSClient, routes []*router.Route, opts ...Option) (*Broker, error) {
	if len(routes) == 0 {
		return nil, merrors.ErrNoRoute
	}
	cfg := config{log: logger.New()}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	b := &Broker{log: cfg.log}
	for _, r := range routes {
		copts := []consumer.Option{
			consumer.WithLogger(cfg.log),
			consumer.WithGlobalMiddleware(cfg.global...),
		}
		c, err := consumer.New(sqsClient, r, append(copts, cfg.extra...)...)
		if err != nil {
			return nil, err
		}
		b.consumers = append(b.consumers, c)
	}
	return b, nil
}

// Run starts every consumer and blocks until ctx is canceled and all have
// drained. If a consumer fails to start (an unresolvable queue, a Scheduled
// Retry route without scheduler client) the others are stopped and the
// joined errors are returned.
func (b *Broker) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(b.consumers))
	for i, c := range b.consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(ctx); err != nil {
				errs[i] = err
				b.log.Error("consumer stopped", slog.String("route", c.Route().QueueName()), slog.Any("error", err))
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
