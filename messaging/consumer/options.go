package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
)

// SQSClient is the part of *sqs.Client the consumer needs, the same five
// methods as loafer-awsx's consumer.SQSClient, so custom client wrappers
// keep working. Deletes are batched, up to 10 messages per call, on a route
// with router.WithDeleteBatch, which needs a client that also implements
// BatchDeleteClient; visibility changes are batched whenever the client
// implements BatchVisibilityClient. *sqs.Client implements both. Otherwise
// each message is acknowledged with its own call.
type SQSClient interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// BatchDeleteClient is implemented by SQS clients with DeleteMessageBatch.
type BatchDeleteClient interface {
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// BatchVisibilityClient is implemented by SQS clients with
// ChangeMessageVisibilityBatch.
type BatchVisibilityClient interface {
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var (
	_ SQSClient             = (*sqs.Client)(nil)
	_ BatchDeleteClient     = (*sqs.Client)(nil)
	_ BatchVisibilityClient = (*sqs.Client)(nil)
	_ SchedulerClient       = (*scheduler.Client)(nil)
)

// SchedulerClient is the part of *scheduler.Client the Scheduled Retry model
// uses.
type SchedulerClient interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
}

// DLQMetric increments loafer_messages_dlq_total for a route; see
// middleware.DLQCounter.
type DLQMetric func(routeName string)

// Clock is the time source of the visibility heartbeat and the scheduled
// retry fire times. Tests inject a fake (messagingtest.NewClock).
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker the consumer uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTicker(d time.Duration) Ticker {
	return realTicker{time.NewTicker(d)}
}

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// Defaults of the consumer options.
const (
	DefaultRetryTimeout     = 5 * time.Second
	DefaultAckFlushInterval = 20 * time.Millisecond
	finalFlushTimeout       = 30 * time.Second
)

type config struct {
	// invalid collects the options' validation errors, returned by New.
	invalid         []error
	log             *slog.Logger
	retryTimeout    time.Duration
	global          []middleware.Middleware
	dlqMetric       DLQMetric
	scheduler       SchedulerClient
	successMetric   func(string)
	retryMetric     func(string)
	deadMetric      func(string)
	clock           Clock
	flushInterval   time.Duration
	shutdownTimeout time.Duration
}

// Option configures a Consumer.
type Option func(*config)

// positive reports whether d > 0, and otherwise records option's value as
// invalid, for New to return wrapping ErrInvalidOption.
func (c *config) positive(option string, d time.Duration) bool {
	if d > 0 {
		return true
	}
	c.invalid = append(c.invalid, merrors.Wrap(merrors.ErrInvalidOption, fmt.Errorf("consumer.%s(%v): must be positive", option, d)))
	return false
}

// WithLogger sets the logger (default: discard). A nil log is ignored.
func WithLogger(log *slog.Logger) Option {
	return func(c *config) {
		if log != nil {
			c.log = log
		}
	}
}

// WithRetryTimeout sets the wait after a failed ReceiveMessage (default 5s).
// New refuses a non-positive d with an error wrapping errors.ErrInvalidOption.
func WithRetryTimeout(d time.Duration) Option {
	return func(c *config) {
		if c.positive("WithRetryTimeout", d) {
			c.retryTimeout = d
		}
	}
}

// WithGlobalMiddleware adds middleware applied outside the route's own.
func WithGlobalMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.global = append(c.global, mws...) }
}

// WithDLQMetric sets the loafer_messages_dlq_total incrementer.
func WithDLQMetric(inc DLQMetric) Option { return func(c *config) { c.dlqMetric = inc } }

// WithSchedulerClient supplies the EventBridge Scheduler client that
// Scheduled Retry routes require.
func WithSchedulerClient(s SchedulerClient) Option { return func(c *config) { c.scheduler = s } }

// WithSuccessMetric is called after a handled message is deleted.
func WithSuccessMetric(fn func(routeName string)) Option {
	return func(c *config) { c.successMetric = fn }
}

// WithRetryMetric is called after a retry schedule is created.
func WithRetryMetric(fn func(routeName string)) Option {
	return func(c *config) { c.retryMetric = fn }
}

// WithDeadLetterMetric is called after an exhausted message is published to
// the scheduled-retry DLQ.
func WithDeadLetterMetric(fn func(routeName string)) Option {
	return func(c *config) { c.deadMetric = fn }
}

// MetricsRecorder receives the consumer's outcome counts per route, as
// loafer-awsx's consumer.WithMetrics takes them. Its methods are called on
// the same events as the functions of WithDLQMetric, WithSuccessMetric,
// WithRetryMetric and WithDeadLetterMetric.
type MetricsRecorder interface {
	// IncDLQ counts a fatal message handed to the queue's redrive policy.
	IncDLQ(routeName string)
	// IncSuccess counts a handled message that was deleted.
	IncSuccess(routeName string)
	// IncRetry counts a Scheduled Retry schedule created.
	IncRetry(routeName string)
	// IncDeadLetter counts an exhausted message published to the
	// Scheduled Retry DLQ.
	IncDeadLetter(routeName string)
}

// WithMetrics sets all four outcome metrics from r; a nil r is ignored.
func WithMetrics(r MetricsRecorder) Option {
	return func(c *config) {
		if r == nil {
			return
		}
		c.dlqMetric, c.successMetric, c.retryMetric, c.deadMetric = r.IncDLQ, r.IncSuccess, r.IncRetry, r.IncDeadLetter
	}
}

// WithClock replaces the wall clock (tests). A nil clock is ignored.
func WithClock(clk Clock) Option {
	return func(c *config) {
		if clk != nil {
			c.clock = clk
		}
	}
}

// WithAckFlushInterval sets how long a partial acknowledgement batch may wait
// before it is sent (default 20ms); full batches of 10 are sent at once.
// Non-positive values are ignored.
func WithAckFlushInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.flushInterval = d
		}
	}
}

// WithShutdownTimeout bounds how long Run takes, after its context is
// canceled, to return (default: unbounded). Received messages get 70% of d
// to finish; then handler contexts are canceled and unstarted messages are
// released; after 20% more Run stops waiting for handlers that ignore
// cancellation, and the final flush of acknowledgements gets what is left of
// d. A message whose handler finishes after that is not acknowledged and SQS
// redelivers it: at least once, never lost. A consumer whose handlers are
// still running cannot be Run again until they return. New refuses a
// non-positive d with an error wrapping errors.ErrInvalidOption.
func WithShutdownTimeout(d time.Duration) Option {
	return func(c *config) {
		if c.positive("WithShutdownTimeout", d) {
			c.shutdownTimeout = d
		}
	}
}
