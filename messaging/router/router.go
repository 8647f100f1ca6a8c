// Package router defines Route, the immutable value object that binds one
// SQS queue to a middleware.Handler together with its polling, dispatch,
// visibility, retry and DLQ settings. Every option is validated by New.
package router

import (
	"context"
	stderrors "errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
)

// Mode is a route's dispatch strategy.
type Mode int

const (
	// Parallel hands each message to any free worker. On a FIFO queue the
	// consumer dispatches by MessageGroupId anyway, as PerGroupID, since
	// running one group's messages concurrently would break its order.
	Parallel Mode = iota
	// PerGroupID hashes MessageGroupId plus the custom group fields to one
	// worker, so a group's messages run one at a time and in order.
	PerGroupID
)

func (m Mode) String() string {
	switch m {
	case Parallel:
		return "Parallel"
	case PerGroupID:
		return "PerGroupID"
	}
	return "Unknown"
}

// RetryModel is how a failed FIFO message is retried.
type RetryModel int

const (
	// VisibilityRetryModel leaves a failed message in the queue and lets its
	// visibility timeout lapse (the default).
	VisibilityRetryModel RetryModel = iota
	// ScheduledRetryModel re-publishes a failed message later through
	// EventBridge Scheduler and deletes the original at once.
	ScheduledRetryModel
)

func (m RetryModel) String() string {
	switch m {
	case VisibilityRetryModel:
		return "Visibility"
	case ScheduledRetryModel:
		return "Scheduled"
	}
	return fmt.Sprintf("RetryModel(%d)", int(m))
}

// Defaults and limits of a route.
const (
	DefaultWorkerPoolSize           = 5
	DefaultMaxMessages        int32 = 10
	DefaultWaitTimeSeconds    int32 = 10
	DefaultVisibilityTimeout  int32 = 30
	MinVisibilityTimeout      int32 = 11
	MaxVisibilityTimeout      int32 = 43200 // 12 h, the SQS maximum
	DefaultExtensionLimit           = 2
	DefaultPollers                  = 1
	DefaultScheduledBaseDelay       = time.Second
	DefaultScheduledMaxDelay        = 15 * time.Minute
	minScheduledDelay               = time.Millisecond
	maxScheduledDelay               = 24 * time.Hour
)

// DLQConfig is the observe-only dead-letter configuration of a route.
type DLQConfig struct {
	// OnDLQ, when set, is called for each message treated as exhausted.
	OnDLQ func(ctx context.Context, msg middleware.Message)
	// MaxReceiveCount mirrors the queue's redrive policy.
	MaxReceiveCount int
}

// ScheduledRetryConfig is the validated Scheduled-model configuration of a
// route.
type ScheduledRetryConfig struct {
	// TargetQueueARN is the EventBridge Scheduler target (the entry queue).
	TargetQueueARN string
	// ExecutionRoleARN is the role the scheduler assumes to send the retry.
	ExecutionRoleARN string
	// DLQQueueURL receives messages whose retries are exhausted.
	DLQQueueURL string
	// MaxRetryCount is the inclusive threshold before DLQ routing.
	MaxRetryCount int
	// BaseBackoff is the first retry's delay (default 1s).
	BaseBackoff time.Duration
	// MaxBackoff caps the delay (default 15m, at most 24h).
	MaxBackoff time.Duration
	// SchedulerDeadLetterARN, when set, is the standard SQS queue where
	// EventBridge Scheduler puts a retry it could not deliver once its own
	// retries are spent. See [WithSchedulerDeadLetter].
	SchedulerDeadLetterARN string
}

// ExpBackoff returns base·2^(attempt-1) capped at max. It never overflows
// and treats attempt < 1 as 1.
func ExpBackoff(base, max time.Duration, attempt int) time.Duration {
	if base <= 0 || max <= 0 {
		return 0
	}
	if attempt < 1 {
		attempt = 1
	}
	d := base
	for i := 1; i < attempt; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// Route binds a queue to a handler. It is immutable once built.
type Route struct {
	queueName         string
	handler           middleware.Handler
	workers           int
	maxMessages       int32
	waitTimeSeconds   int32
	visibilityTimeout int32
	extensionLimit    int
	pollers           int
	mode              Mode
	groupFields       []string
	middleware        []middleware.Middleware
	dlq               *DLQConfig
	retryModel        RetryModel
	retryModelSet     bool
	scheduled         *ScheduledRetryConfig
	scheduledErr      error
	retryBase         time.Duration
	retryMax          time.Duration
	deleteBatch       bool
}

// Option configures a Route.
type Option func(*Route) error

// New builds a Route. It returns ErrEmptyQueueName, ErrNoHandler, or an error
// wrapping ErrInvalidOption (or ErrScheduledRetryConfig) that names the value.
func New(queueName string, handler middleware.Handler, opts ...Option) (*Route, error) {
	if strings.TrimSpace(queueName) == "" {
		return nil, merrors.ErrEmptyQueueName
	}
	if handler == nil {
		return nil, merrors.ErrNoHandler
	}
	r := &Route{
		queueName:         queueName,
		handler:           handler,
		workers:           DefaultWorkerPoolSize,
		maxMessages:       DefaultMaxMessages,
		waitTimeSeconds:   DefaultWaitTimeSeconds,
		visibilityTimeout: DefaultVisibilityTimeout,
		extensionLimit:    DefaultExtensionLimit,
		pollers:           DefaultPollers,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(r); err != nil {
			if isScheduled(err) {
				return nil, err
			}
			return nil, merrors.Wrap(merrors.ErrInvalidOption, err)
		}
	}
	if r.scheduledErr != nil {
		return nil, r.scheduledErr
	}
	if r.retryModel == ScheduledRetryModel {
		if r.scheduled == nil {
			return nil, scheduledErr("scheduled retry model selected without WithScheduledRetry configuration")
		}
		if r.dlq != nil {
			return nil, scheduledErr("WithScheduledRetry and WithDLQ are mutually exclusive")
		}
	}
	return r, nil
}

func isScheduled(err error) bool { return stderrors.Is(err, merrors.ErrScheduledRetryConfig) }

func scheduledErr(format string, a ...any) error {
	return &scheduledConfigError{cause: fmt.Errorf(format, a...)}
}

// scheduledConfigError is an invalid Scheduled Retry setting: it matches
// ErrScheduledRetryConfig and, like every invalid option, ErrInvalidOption.
type scheduledConfigError struct{ cause error }

func (e *scheduledConfigError) Error() string {
	return merrors.ErrScheduledRetryConfig.Error() + ": " + e.cause.Error()
}

func (e *scheduledConfigError) Unwrap() []error {
	return []error{merrors.ErrScheduledRetryConfig, merrors.ErrInvalidOption, e.cause}
}

// WithWorkerPoolSize sets the number of worker goroutines (> 0; default 5).
func WithWorkerPoolSize(n int) Option {
	return func(r *Route) error {
		if n <= 0 {
			return fmt.Errorf("WithWorkerPoolSize: %d must be > 0", n)
		}
		r.workers = n
		return nil
	}
}

// WithMaxMessages sets the messages per ReceiveMessage call ([1, 10]; default 10).
func WithMaxMessages(n int32) Option {
	return func(r *Route) error {
		if n < 1 || n > 10 {
			return fmt.Errorf("WithMaxMessages: %d not in [1, 10]", n)
		}
		r.maxMessages = n
		return nil
	}
}

// WithWaitTimeSeconds sets the long-poll wait ([0, 20]; default 10).
func WithWaitTimeSeconds(n int32) Option {
	return func(r *Route) error {
		if n < 0 || n > 20 {
			return fmt.Errorf("WithWaitTimeSeconds: %d not in [0, 20]", n)
		}
		r.waitTimeSeconds = n
		return nil
	}
}

// WithVisibilityTimeout sets the visibility timeout in seconds (default 30).
// Values <= 11 are clamped up to 11 so a heartbeat always has time to run;
// values above 43200 (12 h, the SQS maximum) are rejected.
func WithVisibilityTimeout(seconds int32) Option {
	return func(r *Route) error {
		if seconds > MaxVisibilityTimeout {
			return fmt.Errorf("WithVisibilityTimeout: %d exceeds the SQS maximum %d", seconds, MaxVisibilityTimeout)
		}
		r.visibilityTimeout = max(seconds, MinVisibilityTimeout)
		return nil
	}
}

// WithExtensionLimit sets how many times a running message's visibility is
// extended (>= 0; default 2). Each extension adds one visibility timeout,
// never past the 12 h SQS maximum counted from receipt, so math.MaxInt keeps
// a message hidden for as long as SQS allows. When no extension is left,
// the consumer cancels the handler's context with cause
// consumer.ErrVisibilityLapsed a third of the timeout before the
// visibility ends; a handler still running when it ends runs beside the
// redelivery of its message.
func WithExtensionLimit(n int) Option {
	return func(r *Route) error {
		if n < 0 {
			return fmt.Errorf("WithExtensionLimit: %d must not be negative", n)
		}
		r.extensionLimit = n
		return nil
	}
}

// WithPollers sets how many goroutines call ReceiveMessage concurrently for
// the route (> 0; default 1). Pollers only receive when the worker pool has
// room, so more pollers never means more unprocessed messages in memory.
func WithPollers(n int) Option {
	return func(r *Route) error {
		if n <= 0 {
			return fmt.Errorf("WithPollers: %d must be > 0", n)
		}
		r.pollers = n
		return nil
	}
}

// WithRunMode selects Parallel (default) or PerGroupID dispatch.
func WithRunMode(mode Mode) Option {
	return func(r *Route) error {
		if mode != Parallel && mode != PerGroupID {
			return fmt.Errorf("WithRunMode: unknown mode %d", int(mode))
		}
		r.mode = mode
		return nil
	}
}

// WithCustomGroupFields sets the message attributes that, with
// MessageGroupId, form the PerGroupID group key (SQS message attributes, or
// the SNS envelope's for a subscription without raw delivery). Empty names
// are ignored, as in loafer-awsx.
func WithCustomGroupFields(fields ...string) Option {
	return func(r *Route) error {
		r.groupFields = r.groupFields[:0]
		for _, f := range fields {
			if strings.TrimSpace(f) != "" {
				r.groupFields = append(r.groupFields, f)
			}
		}
		return nil
	}
}

// WithMiddleware appends route-level middleware (innermost, after the
// broker's global middleware). Nil entries are ignored, as in loafer-awsx,
// so optional middleware can be passed unconditionally.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(r *Route) error {
		for _, m := range mws {
			if m != nil {
				r.middleware = append(r.middleware, m)
			}
		}
		return nil
	}
}

// DLQOption configures WithDLQ.
type DLQOption func(*DLQConfig)

// WithOnDLQ sets the callback for messages treated as exhausted. A nil fn
// leaves the callback unchanged.
func WithOnDLQ(fn func(ctx context.Context, msg middleware.Message)) DLQOption {
	return func(d *DLQConfig) {
		if fn != nil {
			d.OnDLQ = fn
		}
	}
}

// WithDeleteBatch has the consumer delete the route's handled messages with
// DeleteMessageBatch, up to 10 per request, instead of one DeleteMessage per
// message: a tenth of the delete requests SQS bills. It applies under both
// retry models and both run modes and deletes exactly the messages the
// one-by-one path would. The consumer's client must implement
// consumer.BatchDeleteClient (*sqs.Client does); Run refuses one that does
// not with errors.ErrDeleteBatchUnsupported before any SQS call.
func WithDeleteBatch() Option {
	return func(r *Route) error {
		r.deleteBatch = true
		return nil
	}
}

// WithDLQ enables observe-only DLQ detection: once a message's receive count
// reaches maxReceiveCount (> 0; mirror the queue's redrive policy), or its
// handler returns a fatal error, the consumer logs it at Error, increments
// loafer_messages_dlq_total and calls OnDLQ. SQS itself moves the message.
func WithDLQ(maxReceiveCount int, opts ...DLQOption) Option {
	return func(r *Route) error {
		if maxReceiveCount <= 0 {
			return fmt.Errorf("WithDLQ: maxReceiveCount %d must be > 0", maxReceiveCount)
		}
		d := &DLQConfig{MaxReceiveCount: maxReceiveCount}
		for _, o := range opts {
			if o != nil {
				o(d)
			}
		}
		r.dlq = d
		return nil
	}
}

// WithRetryBackoff makes the Visibility model reset a failed message's
// visibility to base·2^(receiveCount-1), capped at max and at the 12 h SQS
// limit, instead of letting the current timeout lapse. Both must be within
// [1s, 12h] and max >= base.
func WithRetryBackoff(base, max time.Duration) Option {
	return func(r *Route) error {
		limit := time.Duration(MaxVisibilityTimeout) * time.Second
		switch {
		case base < time.Second || base > limit:
			return fmt.Errorf("WithRetryBackoff: base %s not in [1s, 12h]", base)
		case max < time.Second || max > limit:
			return fmt.Errorf("WithRetryBackoff: max %s not in [1s, 12h]", max)
		case max < base:
			return fmt.Errorf("WithRetryBackoff: max %s < base %s", max, base)
		}
		r.retryBase, r.retryMax = base, max
		return nil
	}
}

// WithRetryModel selects VisibilityRetryModel or ScheduledRetryModel.
func WithRetryModel(m RetryModel) Option {
	return func(r *Route) error {
		if m != VisibilityRetryModel && m != ScheduledRetryModel {
			return scheduledErr("WithRetryModel: unknown retry model %d", int(m))
		}
		r.retryModel, r.retryModelSet = m, true
		return nil
	}
}

// ScheduledRetryOption configures WithScheduledRetry. The assembled
// configuration is validated by New.
type ScheduledRetryOption func(*ScheduledRetryConfig)

// WithSchedulerIdentity sets the EventBridge Scheduler target queue ARN and
// the execution role ARN it assumes (both required).
func WithSchedulerIdentity(targetQueueARN, executionRoleARN string) ScheduledRetryOption {
	return func(c *ScheduledRetryConfig) {
		c.TargetQueueARN, c.ExecutionRoleARN = targetQueueARN, executionRoleARN
	}
}

// WithScheduledDLQ sets the DLQ queue URL for exhausted messages (required).
func WithScheduledDLQ(dlqQueueURL string) ScheduledRetryOption {
	return func(c *ScheduledRetryConfig) { c.DLQQueueURL = dlqQueueURL }
}

// WithSchedulerDeadLetter sets the ARN of a standard SQS queue (Scheduler
// does not accept a FIFO one) as every retry schedule's dead-letter queue. A
// retry is a copy sent by EventBridge Scheduler after the original was
// deleted: if Scheduler cannot deliver it (the target queue was deleted, the
// role lost its permission) it retries for up to a day and then drops it,
// unless a dead-letter queue is set. There the copy arrives as Scheduler's
// dead-letter event, whose body holds the SendMessage input and so the
// original body and attributes. The execution role needs sqs:SendMessage on
// that queue.
func WithSchedulerDeadLetter(queueARN string) ScheduledRetryOption {
	return func(c *ScheduledRetryConfig) { c.SchedulerDeadLetterARN = queueARN }
}

// schedulerDLQARN is the pattern EventBridge Scheduler accepts for a
// dead-letter queue: a standard queue's ARN.
var schedulerDLQARN = regexp.MustCompile(`^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[a-zA-Z0-9_-]+$`)

// WithMaxRetryCount sets the inclusive retry threshold, [0, 2147483647].
func WithMaxRetryCount(n int) ScheduledRetryOption {
	return func(c *ScheduledRetryConfig) { c.MaxRetryCount = n }
}

// WithBackoff sets base and max retry delay, each within [1ms, 24h], max >= base.
func WithBackoff(base, maxDelay time.Duration) ScheduledRetryOption {
	return func(c *ScheduledRetryConfig) { c.BaseBackoff, c.MaxBackoff = base, maxDelay }
}

func validateScheduled(c ScheduledRetryConfig) []string {
	var errs []string
	if strings.TrimSpace(c.TargetQueueARN) == "" {
		errs = append(errs, "WithSchedulerIdentity: target queue ARN is empty")
	} else if _, err := QueueURLFromARN(c.TargetQueueARN); err != nil {
		errs = append(errs, fmt.Sprintf("WithSchedulerIdentity: target queue ARN %q is not an SQS queue ARN", c.TargetQueueARN))
	}
	if strings.TrimSpace(c.ExecutionRoleARN) == "" {
		errs = append(errs, "WithSchedulerIdentity: execution role ARN is empty")
	} else if !strings.HasPrefix(c.ExecutionRoleARN, "arn:") {
		errs = append(errs, fmt.Sprintf("WithSchedulerIdentity: execution role ARN %q is not an ARN", c.ExecutionRoleARN))
	}
	if strings.TrimSpace(c.DLQQueueURL) == "" {
		errs = append(errs, "WithScheduledDLQ: DLQ queue URL is empty")
	}
	if c.SchedulerDeadLetterARN != "" && !schedulerDLQARN.MatchString(c.SchedulerDeadLetterARN) {
		errs = append(errs, fmt.Sprintf("WithSchedulerDeadLetter: %q is not the ARN of a standard SQS queue", c.SchedulerDeadLetterARN))
	}
	if c.MaxRetryCount < 0 || c.MaxRetryCount > 2147483647 {
		errs = append(errs, fmt.Sprintf("WithMaxRetryCount: %d not in [0, 2147483647]", c.MaxRetryCount))
	}
	switch {
	case c.BaseBackoff < minScheduledDelay || c.BaseBackoff > maxScheduledDelay:
		errs = append(errs, fmt.Sprintf("WithBackoff: base %s not in [1ms, 24h]", c.BaseBackoff))
	case c.MaxBackoff < minScheduledDelay || c.MaxBackoff > maxScheduledDelay:
		errs = append(errs, fmt.Sprintf("WithBackoff: max %s not in [1ms, 24h]", c.MaxBackoff))
	case c.MaxBackoff < c.BaseBackoff:
		errs = append(errs, fmt.Sprintf("WithBackoff: max %s < base %s", c.MaxBackoff, c.BaseBackoff))
	}
	return errs
}

// QueueURLFromARN turns arn:PARTITION:sqs:REGION:ACCOUNT:NAME into the
// queue URL.
func QueueURLFromARN(arn string) (string, error) {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[3] == "" || p[4] == "" || p[5] == "" {
		return "", fmt.Errorf("not an SQS queue ARN: %q", arn)
	}
	host := "sqs." + p[3] + ".amazonaws.com"
	if p[1] == "aws-cn" {
		host += ".cn"
	}
	return "https://" + host + "/" + p[4] + "/" + p[5], nil
}

// WithScheduledRetry selects ScheduledRetryModel with the given configuration.
// Base backoff defaults to 1s and max backoff to 15m (or the base, if
// larger). Errors wrap errors.ErrScheduledRetryConfig and name each
// offending value.
func WithScheduledRetry(opts ...ScheduledRetryOption) Option {
	return func(r *Route) error {
		cfg := ScheduledRetryConfig{}
		for _, o := range opts {
			if o != nil {
				o(&cfg)
			}
		}
		if cfg.BaseBackoff == 0 {
			cfg.BaseBackoff = DefaultScheduledBaseDelay
		}
		if cfg.MaxBackoff == 0 {
			cfg.MaxBackoff = max(DefaultScheduledMaxDelay, cfg.BaseBackoff)
		}
		if errs := validateScheduled(cfg); len(errs) > 0 {
			// Remember the error so New reports it even when a later option
			// would otherwise mask it.
			r.scheduledErr = scheduledErr("%s", strings.Join(errs, "; "))
			return r.scheduledErr
		}
		r.scheduled = &cfg
		r.retryModel, r.retryModelSet = ScheduledRetryModel, true
		return nil
	}
}

// QueueName is the queue's name (or URL) as given to New.
func (r *Route) QueueName() string { return r.queueName }

// Handler is the route's handler, without middleware.
func (r *Route) Handler() middleware.Handler { return r.handler }

// WorkerPoolSize is the number of workers.
func (r *Route) WorkerPoolSize() int { return r.workers }

// MaxMessages is the batch size of a receive call.
func (r *Route) MaxMessages() int32 { return r.maxMessages }

// WaitTimeSeconds is the long-poll wait.
func (r *Route) WaitTimeSeconds() int32 { return r.waitTimeSeconds }

// VisibilityTimeout is the visibility timeout in seconds.
func (r *Route) VisibilityTimeout() int32 { return r.visibilityTimeout }

// ExtensionLimit is the maximum number of visibility extensions.
func (r *Route) ExtensionLimit() int { return r.extensionLimit }

// Pollers is the number of concurrent receive loops.
func (r *Route) Pollers() int { return r.pollers }

// DeleteBatch reports whether the route deletes with DeleteMessageBatch
// (WithDeleteBatch).
func (r *Route) DeleteBatch() bool { return r.deleteBatch }

// RunMode is the dispatch mode.
func (r *Route) RunMode() Mode { return r.mode }

// CustomGroupFields returns a copy of the custom group fields.
func (r *Route) CustomGroupFields() []string { return append([]string(nil), r.groupFields...) }

// Middlewares returns a copy of the route-level middleware.
func (r *Route) Middlewares() []middleware.Middleware {
	return append([]middleware.Middleware(nil), r.middleware...)
}

// DLQ returns a copy of the observe-only DLQ configuration, or nil when the
// route has none.
func (r *Route) DLQ() *DLQConfig {
	if r.dlq == nil {
		return nil
	}
	d := *r.dlq
	return &d
}

// RetryBackoff returns the Visibility-model backoff and whether it is set.
func (r *Route) RetryBackoff() (base, max time.Duration, ok bool) {
	return r.retryBase, r.retryMax, r.retryBase > 0
}

// RetryModel is the route's retry model.
func (r *Route) RetryModel() RetryModel { return r.retryModel }

// ScheduledRetry returns a copy of the Scheduled-model configuration, or nil
// when the route uses the Visibility model.
func (r *Route) ScheduledRetry() *ScheduledRetryConfig {
	if r.retryModel != ScheduledRetryModel || r.scheduled == nil {
		return nil
	}
	c := *r.scheduled
	return &c
}

// IsFIFO reports whether the queue is a FIFO queue (name ends in ".fifo").
func (r *Route) IsFIFO() bool { return strings.HasSuffix(r.queueName, ".fifo") }
