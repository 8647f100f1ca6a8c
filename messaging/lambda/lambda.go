// Package lambda runs the same routes, middleware and typed handlers inside
// an AWS Lambda SQS event source: Handle takes an events.SQSEvent and returns
// an events.SQSEventResponse whose BatchItemFailures name the messages to
// retry (enable ReportBatchItemFailures on the event source mapping).
// Scheduled Retry routes work as under the consumer (WithSchedulerClient and
// WithSQSClient are required for them): a failed record whose retry schedule
// or dead letter was created counts as handled, so Lambda deletes it and its
// FIFO group moves on.
//
// Handle never lets Lambda redeliver a record that succeeded: a panic in a
// record's handler fails only that record (and, on a FIFO queue, the rest of
// its message group), and records still running when the invocation nears
// its deadline are reported as failures before Lambda ends the invocation,
// instead of the whole batch being retried.
package lambda

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// DefaultDeadlineMargin is how long before the invocation's deadline the
// records' context ends by default: the time Handle keeps to report the
// unfinished records and return before Lambda stops the invocation.
const DefaultDeadlineMargin = time.Second

// MaxDeadlineMargin bounds WithDeadlineMargin: Lambda's longest timeout.
const MaxDeadlineMargin = 15 * time.Minute

// ErrDeadline is the cause (context.Cause) of a record context that ended
// because the invocation's deadline, less the margin, was reached. The
// records still running then are reported as failures, so Lambda retries
// them and deletes only the records that finished.
var ErrDeadline = errors.New("lambda: invocation deadline near; unfinished records reported as failed")

// Handler dispatches SQS event records to routes by queue name.
type Handler struct {
	routes      map[string]*entry
	log         *slog.Logger
	dlqMetric   func(string)
	retryMetric func(string)
	deadMetric  func(string)
	margin      time.Duration
}

type entry struct {
	route   *router.Route
	handler middleware.Handler
	retrier *consumer.Retrier // Scheduled Retry routes only
}

type config struct {
	log         *slog.Logger
	global      []middleware.Middleware
	dlqMetric   func(string)
	scheduler   consumer.SchedulerClient
	sender      consumer.Sender
	retryMetric func(string)
	deadMetric  func(string)
	margin      time.Duration
}

// WithDeadlineMargin sets how long before the invocation's deadline
// (ctx.Deadline() of Handle) the records' context ends, with cause
// ErrDeadline, and Handle returns with the unfinished records reported as
// failures (default DefaultDeadlineMargin). It must be within
// [0, MaxDeadlineMargin] and shorter than the function's timeout, or every
// record fails unrun.
func WithDeadlineMargin(d time.Duration) Option { return func(c *config) { c.margin = d } }

// WithSchedulerClient supplies the EventBridge Scheduler client that
// Scheduled Retry routes require.
func WithSchedulerClient(s consumer.SchedulerClient) Option {
	return func(c *config) { c.scheduler = s }
}

// WithSQSClient supplies the SQS client (a *sqs.Client) with which Scheduled
// Retry routes send exhausted messages to their DLQ.
func WithSQSClient(s consumer.Sender) Option { return func(c *config) { c.sender = s } }

// WithRetryMetric is called after a retry schedule is created.
func WithRetryMetric(fn func(routeName string)) Option { return func(c *config) { c.retryMetric = fn } }

// WithDeadLetterMetric is called after an exhausted message is sent to the
// scheduled-retry DLQ.
func WithDeadLetterMetric(fn func(routeName string)) Option {
	return func(c *config) { c.deadMetric = fn }
}

// Option configures a Handler.
type Option func(*config)

// WithLogger sets the logger (default: discard).
func WithLogger(log *slog.Logger) Option {
	return func(c *config) {
		if log != nil {
			c.log = log
		}
	}
}

// WithMiddleware adds global middleware, outermost on every route.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.global = append(c.global, mws...) }
}

// WithDLQMetric sets the loafer_messages_dlq_total incrementer.
func WithDLQMetric(inc func(routeName string)) Option { return func(c *config) { c.dlqMetric = inc } }

// New builds a Handler. It returns ErrNoRoute without routes or with a nil
// route, and ErrInvalidOption for two routes on one queue or a deadline
// margin out of range.
func New(routes []*router.Route, opts ...Option) (*Handler, error) {
	if len(routes) == 0 {
		return nil, merrors.ErrNoRoute
	}
	cfg := config{log: slog.New(slog.DiscardHandler), margin: DefaultDeadlineMargin}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.margin < 0 || cfg.margin > MaxDeadlineMargin {
		return nil, merrors.Wrap(merrors.ErrInvalidOption,
			fmt.Errorf("lambda: WithDeadlineMargin: %s is outside [0, %s]", cfg.margin, MaxDeadlineMargin))
	}
	h := &Handler{routes: map[string]*entry{}, log: cfg.log, dlqMetric: cfg.dlqMetric,
		retryMetric: cfg.retryMetric, deadMetric: cfg.deadMetric, margin: cfg.margin}
	for _, r := range routes {
		if r == nil {
			return nil, merrors.ErrNoRoute
		}
		name := queueName(r.QueueName())
		if _, dup := h.routes[name]; dup {
			return nil, merrors.Wrap(merrors.ErrInvalidOption, errString("two routes for queue "+name))
		}
		mws := append(append([]middleware.Middleware(nil), cfg.global...), r.Middlewares()...)
		e := &entry{route: r, handler: middleware.Chain(mws...)(r.Handler())}
		if sr := r.ScheduledRetry(); sr != nil {
			switch {
			case cfg.scheduler == nil:
				return nil, fmt.Errorf("lambda: route %s: %w", name, merrors.ErrNoSchedulerClient)
			case cfg.sender == nil:
				return nil, fmt.Errorf("lambda: route %s uses Scheduled Retry and needs WithSQSClient for its DLQ: %w", name, merrors.ErrNoSQSClient)
			}
			e.retrier = &consumer.Retrier{Config: *sr, Scheduler: cfg.scheduler, SQS: cfg.sender}
		}
		h.routes[name] = e
	}
	return h, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func queueName(s string) string {
	if i := strings.LastIndexAny(s, ":/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Handle processes the event. Records of standard queues run concurrently
// (up to the route's worker pool size); records of FIFO queues run in order,
// and after a failure the rest of that message group's records are reported
// as failures too, so nothing runs ahead of the failed message, while other
// groups go on. Records of an unknown queue are reported as failures.
//
// A handler that panics fails its record (the panic is logged at Error with
// its stack, and handled as an error wrapping errors.ErrPanic). Records run
// under a context that ends WithDeadlineMargin before ctx's deadline, with
// cause ErrDeadline; Handle then returns at once, reporting every record
// that has not finished as a failure. A handler that ignores the
// cancellation keeps running after Handle returned, but its outcome no
// longer counts: Lambda retries the record. The error is always nil:
// failures are per item.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	rctx, cancel := h.recordContext(ctx)
	defer cancel()
	res := &results{state: make([]uint8, len(ev.Records))}
	if rctx.Err() != nil {
		// The margin leaves no time (or the invocation already ended):
		// start nothing that would only be cut short.
		resp, _ := res.close(ev.Records)
		h.log.ErrorContext(ctx, "no time left before the invocation deadline; every record reported as failed",
			slog.Int("records", len(ev.Records)), slog.Duration("margin", h.margin), slog.Any("cause", context.Cause(rctx)))
		return resp, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.dispatch(rctx, ev.Records, res)
	}()
	select {
	case <-done:
	case <-rctx.Done():
	}
	resp, unfinished := res.close(ev.Records)
	if unfinished > 0 && rctx.Err() != nil {
		h.log.ErrorContext(ctx, "records unfinished at the invocation deadline; reported as failed",
			slog.Int("unfinished", unfinished), slog.Duration("margin", h.margin),
			slog.Any("cause", context.Cause(rctx)))
	}
	return resp, nil
}

// recordContext is ctx ending h.margin before its deadline, with cause
// ErrDeadline.
func (h *Handler) recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, dl.Add(-h.margin), ErrDeadline)
}

// Record outcomes.
const (
	pending uint8 = iota // not run, skipped, or still running
	failed
	handled
)

// results records each record's outcome; once closed, late outcomes of
// handlers that outlived the deadline are ignored.
type results struct {
	mu     sync.Mutex
	state  []uint8
	closed bool
}

func (r *results) set(i int, ok bool) {
	r.mu.Lock()
	if !r.closed {
		r.state[i] = failed
		if ok {
			r.state[i] = handled
		}
	}
	r.mu.Unlock()
}

// close freezes the outcome: every record not known to be handled is a
// failure. It also returns how many records never reached an outcome.
func (r *results) close(recs []events.SQSMessage) (resp events.SQSEventResponse, unfinished int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for i, st := range r.state {
		if st != handled {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: recs[i].MessageId})
		}
		if st == pending {
			unfinished++
		}
	}
	return resp, unfinished
}

// dispatch runs the records by queue; a record it does not mark succeeded
// (failed, skipped behind a failure of its FIFO group, not started before the
// deadline, unknown queue) is reported as a failure.
func (h *Handler) dispatch(ctx context.Context, recs []events.SQSMessage, res *results) {
	type group struct {
		e   *entry
		idx []int
	}
	var order []string
	groups := map[string]*group{}
	for i := range recs {
		name := queueName(recs[i].EventSourceARN)
		g, ok := groups[name]
		if !ok {
			g = &group{e: h.routes[name]}
			groups[name] = g
			order = append(order, name)
		}
		g.idx = append(g.idx, i)
	}
	for _, name := range order {
		g := groups[name]
		if g.e == nil {
			h.log.ErrorContext(ctx, "no route for queue", slog.String("queue", name), slog.Int("records", len(g.idx)))
			continue
		}
		if g.e.route.IsFIFO() || strings.HasSuffix(name, ".fifo") {
			blocked := map[string]bool{} // message groups with a failed record
			for _, i := range g.idx {
				r := &recs[i]
				gid := r.Attributes["MessageGroupId"]
				if blocked[gid] || ctx.Err() != nil {
					continue
				}
				ok := h.run(ctx, g.e, name, r)
				res.set(i, ok)
				if !ok {
					blocked[gid] = true
				}
			}
			continue
		}
		sem := make(chan struct{}, g.e.route.WorkerPoolSize())
		var wg sync.WaitGroup
	launch:
		for _, i := range g.idx {
			if ctx.Err() != nil {
				break // a free slot must not win over an ended context
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				break launch
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				res.set(i, h.run(ctx, g.e, name, &recs[i]))
			}()
		}
		wg.Wait()
	}
}

// scheduled applies the Scheduled Retry model: once the retry schedule or
// the DLQ message exists the record counts as handled, so Lambda deletes it
// and a FIFO group moves on; otherwise it is reported as a failure and
// retried when its visibility lapses.
func (h *Handler) scheduled(ctx context.Context, e *entry, queue string, r *events.SQSMessage, class merrors.Class, delay time.Duration) bool {
	out := e.retrier.Fail(ctx, sqsMessage(r), class, delay)
	log := h.log.With(slog.String("queue", queue), slog.String("message_id", r.MessageId), slog.Int("retry_count", out.RetryCount))
	switch out.Decision {
	case consumer.Retried:
		log.WarnContext(ctx, "retry scheduled", slog.Duration("delay", out.Delay))
		if h.retryMetric != nil {
			h.retryMetric(queue)
		}
		return true
	case consumer.DeadLettered:
		log.ErrorContext(ctx, "message dead-lettered")
		if h.deadMetric != nil {
			h.deadMetric(queue)
		}
		return true
	}
	log.ErrorContext(ctx, "scheduled retry failed; record reported as failed", slog.Any("retry_error", out.Err))
	return false
}

// sqsMessage converts a Lambda record to the SQS SDK message shape.
func sqsMessage(r *events.SQSMessage) *types.Message {
	m := &types.Message{MessageId: aws.String(r.MessageId), ReceiptHandle: aws.String(r.ReceiptHandle),
		Body: aws.String(r.Body), Attributes: r.Attributes}
	if len(r.MessageAttributes) > 0 {
		m.MessageAttributes = make(map[string]types.MessageAttributeValue, len(r.MessageAttributes))
		for k, v := range r.MessageAttributes {
			m.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String(v.DataType),
				StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	return m
}

// run handles one record and reports whether it counts as handled. A panic
// anywhere in it (the handler, the DLQ observer) fails the record instead
// of the process: on a standard queue records run on goroutines of their
// own, where a panic would end the whole invocation and every record of the
// batch would be redelivered.
func (h *Handler) run(ctx context.Context, e *entry, queue string, r *events.SQSMessage) (handled bool) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, "panic while handling a record; record reported as failed", queue, r, p)
			handled = false
		}
	}()
	m := &message{rec: r, queue: queue}
	err := h.call(ctx, e, queue, m)
	if err == nil && !m.backoffSet {
		return true
	}
	if m.backoffSet {
		if cl, _ := merrors.Classify(err); cl != merrors.FatalClass {
			err = merrors.Backoff(err, m.backoff)
		}
	}
	class, delay := merrors.Classify(err)
	h.log.LogAttrs(ctx, slog.LevelError, "handler returned an error", slog.String("queue", queue),
		slog.String("receipt_handle", r.ReceiptHandle), slog.String("group_id", r.Attributes["MessageGroupId"]),
		slog.String("message_id", r.MessageId), slog.String("class", class.String()), slog.Any("error", err))
	if e.retrier != nil {
		return h.scheduled(ctx, e, queue, r, class, delay)
	}
	if dlq := e.route.DLQ(); dlq != nil && (class == merrors.FatalClass || m.ReceiveCount() >= dlq.MaxReceiveCount) {
		h.log.ErrorContext(ctx, "message exhausted; left in source queue for AWS SQS redrive", slog.String("queue", queue),
			slog.String("queue_name", queue),
			slog.String("message_id", r.MessageId), slog.Int("receive_count", m.ReceiveCount()))
		if h.dlqMetric != nil {
			h.dlqMetric(queue)
		}
		if dlq.OnDLQ != nil {
			dlq.OnDLQ(ctx, m)
		}
	}
	return false
}

// call runs the route's handler, turning a panic into an error wrapping
// errors.ErrPanic so it is classified, retried and dead-lettered like any
// other failure.
func (h *Handler) call(ctx context.Context, e *entry, queue string, m *message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, "handler panicked", queue, m.rec, p)
			err = merrors.Wrap(merrors.ErrPanic, fmt.Errorf("%v", p))
		}
	}()
	return e.handler(ctx, m)
}

func (h *Handler) logPanic(ctx context.Context, msg, queue string, r *events.SQSMessage, p any) {
	h.log.ErrorContext(ctx, msg, slog.String("queue", queue),
		slog.String("message_id", r.MessageId), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
}

// message is one record handed to a route's handler. It implements
// middleware.Delivery, so handlers read its ID, group and receive count and
// ask for a Backoff the same way under Lambda as under the consumer.
type message struct {
	rec        *events.SQSMessage
	queue      string
	backoffSet bool
	backoff    time.Duration
	envOnce    sync.Once
	env        *middleware.SNSEnvelope
}

var _ middleware.Delivery = (*message)(nil)

func (m *message) ID() string                  { return m.rec.MessageId }
func (m *message) Body() []byte                { return []byte(m.rec.Body) }
func (m *message) Decode(out any) error        { return json.Unmarshal(m.Body(), out) }
func (m *message) DecodeMessage(out any) error { return json.Unmarshal([]byte(m.Message()), out) }
func (m *message) Identifier() string          { return m.rec.ReceiptHandle }

func (m *message) envelope() *middleware.SNSEnvelope {
	m.envOnce.Do(func() {
		if env, ok := middleware.ParseSNSEnvelope([]byte(m.rec.Body)); ok {
			m.env = &env
		}
	})
	return m.env
}

func (m *message) Message() string {
	if env := m.envelope(); env != nil {
		return env.Message
	}
	return m.rec.Body
}

func (m *message) Attribute(name string) string {
	if v, ok := m.rec.MessageAttributes[name]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	if env := m.envelope(); env != nil {
		return env.MessageAttributes[name].Value
	}
	return ""
}

func (m *message) Attributes() map[string]string {
	out := make(map[string]string, len(m.rec.MessageAttributes))
	if env := m.envelope(); env != nil {
		for k, v := range env.MessageAttributes {
			out[k] = v.Value
		}
	}
	for k, v := range m.rec.MessageAttributes {
		if v.StringValue != nil {
			out[k] = *v.StringValue
		}
	}
	return out
}

func (m *message) UserMessageAttribute(name string) string {
	if v, ok := m.rec.MessageAttributes[name]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}

func (m *message) UserMessageAttributes() map[string]string {
	out := make(map[string]string, len(m.rec.MessageAttributes))
	for k, v := range m.rec.MessageAttributes {
		if v.StringValue != nil {
			out[k] = *v.StringValue
		}
	}
	return out
}

func (m *message) Metadata() map[string]string { return m.Attributes() }

func (m *message) SystemAttributeByKey(name string) string { return m.rec.Attributes[name] }

func (m *message) SystemAttributes() map[string]string {
	out := make(map[string]string, len(m.rec.Attributes))
	for k, v := range m.rec.Attributes {
		out[k] = v
	}
	return out
}

func (m *message) TimeStamp() time.Time {
	if env := m.envelope(); env != nil && !env.Timestamp.IsZero() {
		return env.Timestamp
	}
	ms, err := strconv.ParseInt(m.rec.Attributes["SentTimestamp"], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func (m *message) GroupID() string { return m.rec.Attributes["MessageGroupId"] }
func (m *message) ReceiveCount() int {
	n, err := strconv.Atoi(m.rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}
func (m *message) QueueName() string { return m.queue }

// Backoff marks the record as failed: Lambda retries it when its visibility
// timeout lapses (under Scheduled Retry, after the delay).
func (m *message) Backoff(d time.Duration) { m.backoffSet, m.backoff = true, max(d, 0) }
