// Package lambda runs the same routes, middleware and typed handlers inside
// an AWS Lambda SQS event source: Handle takes an events.SQSEvent and returns
// an events.SQSEventResponse whose BatchItemFailures name the messages to
// retry (enable ReportBatchItemFailures on the event source mapping).
// Scheduled Retry routes work as under the consumer (WithSchedulerClient and
// WithSQSClient are required for them): a failed record whose retry schedule
// or dead letter was created counts as handled, so Lambda deletes it and its
// FIFO group moves on.
package lambda

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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

// Handler dispatches SQS event records to routes by queue name.
type Handler struct {
	routes      map[string]*entry
	log         *slog.Logger
	dlqMetric   func(string)
	retryMetric func(string)
	deadMetric  func(string)
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
}

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
// route, and ErrInvalidOption for two routes on one queue.
func New(routes []*router.Route, opts ...Option) (*Handler, error) {
	if len(routes) == 0 {
		return nil, merrors.ErrNoRoute
	}
	cfg := config{log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	h := &Handler{routes: map[string]*entry{}, log: cfg.log, dlqMetric: cfg.dlqMetric,
		retryMetric: cfg.retryMetric, deadMetric: cfg.deadMetric}
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
// and after a failure the rest of that queue's records are reported as
// failures too, so nothing runs ahead of the failed message. Records of an
// unknown queue are reported as failures. The error is always nil: failures
// are per item.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	var mu sync.Mutex
	fail := func(id string) {
		mu.Lock()
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		mu.Unlock()
	}
	// Group records by queue, keeping order.
	type group struct {
		e       *entry
		records []*events.SQSMessage
	}
	var order []string
	groups := map[string]*group{}
	for i := range ev.Records {
		rec := &ev.Records[i]
		name := queueName(rec.EventSourceARN)
		g, ok := groups[name]
		if !ok {
			g = &group{e: h.routes[name]}
			groups[name] = g
			order = append(order, name)
		}
		g.records = append(g.records, rec)
	}
	for _, name := range order {
		g := groups[name]
		if g.e == nil {
			h.log.ErrorContext(ctx, "no route for queue", slog.String("queue", name))
			for _, r := range g.records {
				fail(r.MessageId)
			}
			continue
		}
		if g.e.route.IsFIFO() || strings.HasSuffix(name, ".fifo") {
			for i, r := range g.records {
				if !h.run(ctx, g.e, name, r) {
					for _, rest := range g.records[i:] {
						fail(rest.MessageId)
					}
					break
				}
			}
			continue
		}
		sem := make(chan struct{}, g.e.route.WorkerPoolSize())
		var wg sync.WaitGroup
		for _, r := range g.records {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if !h.run(ctx, g.e, name, r) {
					fail(r.MessageId)
				}
			}()
		}
		wg.Wait()
	}
	return resp, nil
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

func (h *Handler) run(ctx context.Context, e *entry, queue string, r *events.SQSMessage) bool {
	m := &message{rec: r, queue: queue}
	err := e.handler(ctx, m)
	if err == nil && !m.backoffSet {
		return true
	}
	if m.backoffSet {
		if cl, _ := merrors.Classify(err); cl != merrors.FatalClass {
			err = merrors.Backoff(err, m.backoff)
		}
	}
	class, delay := merrors.Classify(err)
	h.log.LogAttrs(ctx, slog.LevelWarn, "message failed", slog.String("queue", queue),
		slog.String("message_id", r.MessageId), slog.String("class", class.String()), slog.Any("error", err))
	if e.retrier != nil {
		return h.scheduled(ctx, e, queue, r, class, delay)
	}
	if dlq := e.route.DLQ(); dlq != nil && (class == merrors.FatalClass || m.ReceiveCount() >= dlq.MaxReceiveCount) {
		h.log.ErrorContext(ctx, "message exhausted; left for SQS redrive", slog.String("queue", queue),
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

type message struct {
	rec        *events.SQSMessage
	queue      string
	backoffSet bool
	backoff    time.Duration
	envOnce    sync.Once
	env        *middleware.SNSEnvelope
}

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
