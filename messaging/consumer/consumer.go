package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// maxVisibility is the SQS limit on a message's total invisibility, counted
// from when it was received.
const maxVisibility = time.Duration(router.MaxVisibilityTimeout) * time.Second

var (
	systemAttributeNames  = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
	messageAttributeNames = []string{"All"}
)

// ErrVisibilityLapsed is the cause (context.Cause) of a handler's context
// canceled because its message's visibility can no longer be extended: the
// route's extension limit (router.WithExtensionLimit) is used up, the 12 h
// SQS maximum counted from receipt is reached, or the extensions failed.
// The context ends a third of the visibility timeout before the visibility
// does; a handler still running when it ends may run alongside a
// redelivery of its message to this or another consumer.
var ErrVisibilityLapsed = errors.New("consumer: visibility can no longer be extended; SQS will redeliver the message")

// Consumer polls one route's queue. Create it with New and call Run.
type Consumer struct {
	client  SQSClient
	route   *router.Route
	cfg     config
	handler middleware.Handler
	name    string
	running atomic.Bool
	// abandoned is set when the shutdown timeout cut the drain: handlers
	// still running then must not acknowledge anything.
	abandoned atomic.Bool

	queueURL  string
	vis       time.Duration
	perGroup  bool
	sched     *router.ScheduledRetryConfig
	retrier   *Retrier
	dlq       *router.DLQConfig
	seq       atomic.Uint64
	batchPool sync.Pool

	// mu guards the in-flight batch list and each delivery's done flag.
	mu   sync.Mutex
	head *batch

	slots *semaphore
	ack   *acker
	fatal fatalSet
}

// fatalSet remembers, per process and bounded, the messages whose handler
// failed fatally on a WithDLQ route, so their redeliveries on the way to the
// redrive do not run the handler again.
type fatalSet struct {
	mu    sync.Mutex
	errs  map[string]error
	order []string // insertion order, for eviction
}

const fatalSetSize = 4096

func (f *fatalSet) put(id string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = make(map[string]error)
	}
	if _, ok := f.errs[id]; ok {
		return
	}
	if len(f.order) >= fatalSetSize {
		delete(f.errs, f.order[0])
		f.order = f.order[1:]
	}
	f.errs[id] = err
	f.order = append(f.order, id)
}

func (f *fatalSet) get(id string) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err, ok := f.errs[id]
	return err, ok
}

func (f *fatalSet) forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.errs, id) // the order entry ages out on its own
}

// New builds a Consumer for route. It returns ErrNoSQSClient or ErrNoRoute;
// nothing is contacted until Run.
func New(client SQSClient, route *router.Route, opts ...Option) (*Consumer, error) {
	if client == nil {
		return nil, merrors.ErrNoSQSClient
	}
	if route == nil {
		return nil, merrors.ErrNoRoute
	}
	cfg := config{
		log:           slog.New(slog.DiscardHandler),
		retryTimeout:  DefaultRetryTimeout,
		clock:         realClock{},
		flushInterval: DefaultAckFlushInterval,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := errors.Join(cfg.invalid...); err != nil {
		return nil, err
	}
	mws := append(append([]middleware.Middleware(nil), cfg.global...), route.Middlewares()...)
	c := &Consumer{
		client:   client,
		route:    route,
		cfg:      cfg,
		handler:  middleware.Chain(mws...)(route.Handler()),
		name:     route.QueueName(),
		vis:      time.Duration(route.VisibilityTimeout()) * time.Second,
		perGroup: route.RunMode() == router.PerGroupID,
		sched:    route.ScheduledRetry(),
		dlq:      route.DLQ(),
	}
	if route.IsFIFO() {
		// A FIFO queue is ordered per group whatever the mode: Parallel
		// dispatch would run a group's messages of one receive batch
		// concurrently, delete later ones before earlier ones, and not hold
		// back the rest of a group after a failure.
		c.perGroup = true
	}
	if c.sched != nil {
		c.retrier = &Retrier{Config: *c.sched, Scheduler: cfg.scheduler, SQS: client, Now: cfg.clock.Now}
	}
	c.batchPool.New = func() any { return &batch{items: make([]delivery, 0, route.MaxMessages())} }
	return c, nil
}

// Route returns the consumer's route.
func (c *Consumer) Route() *router.Route { return c.route }

// Run consumes until ctx is canceled, then drains and returns nil. It returns
// ErrNoSchedulerClient for a Scheduled Retry route without a scheduler client,
// ErrDeleteBatchUnsupported for a router.WithDeleteBatch route on a client
// without DeleteMessageBatch,
// and an error wrapping ErrQueueResolve when the queue URL cannot be found.
// A Consumer runs at most once at a time.
func (c *Consumer) Run(ctx context.Context) error {
	if c.sched != nil && c.cfg.scheduler == nil {
		return merrors.ErrNoSchedulerClient
	}
	if c.route.DeleteBatch() {
		if _, ok := c.client.(BatchDeleteClient); !ok {
			return fmt.Errorf("route %s: %w", c.name, merrors.ErrDeleteBatchUnsupported)
		}
	}
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("consumer %s: already running", c.name)
	}
	c.abandoned.Store(false)
	stuck := false
	defer func() {
		if !stuck {
			c.running.Store(false)
		}
	}()
	if err := c.resolve(ctx); err != nil {
		return err
	}

	workers := c.route.WorkerPoolSize()
	max := int(c.route.MaxMessages())
	capacity := workers + max*c.route.Pollers() + batchMax*maxDeleteFlights
	c.slots = newSemaphore(capacity)
	c.ack = newAcker(c, capacity)

	// Handlers outlive ctx so received messages can finish; hardCancel ends
	// them when the shutdown timeout elapses.
	hctx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()

	queues := make([]chan *delivery, 1)
	if c.perGroup {
		queues = make([]chan *delivery, workers)
	}
	for i := range queues {
		queues[i] = make(chan *delivery, capacity)
	}

	ackDone := make(chan struct{})
	go func() { defer close(ackDone); c.ack.loop(context.WithoutCancel(ctx)) }()

	var wg sync.WaitGroup
	for i := range workers {
		q := queues[0]
		if c.perGroup {
			q = queues[i]
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.work(hctx, q) }()
	}
	var pollers sync.WaitGroup
	for range c.route.Pollers() {
		pollers.Add(1)
		go func() { defer pollers.Done(); c.poll(ctx, queues) }()
	}

	// Pollers end only once ctx is canceled; the shutdown timeout counts
	// from then and bounds the whole drain, a receive that outlives the
	// cancellation included.
	<-ctx.Done()
	start := time.Now()
	polled := make(chan struct{})
	go func() {
		pollers.Wait()
		for _, q := range queues {
			close(q)
		}
		close(polled)
	}()
	drained := make(chan struct{})
	go func() { <-polled; wg.Wait(); close(drained) }()
	var flushBy time.Time
	if st := c.cfg.shutdownTimeout; st > 0 {
		// One deadline bounds the whole shutdown, even for handlers that
		// ignore cancellation: handlers get 70% of it to finish, canceled
		// handlers 20% more, and the final flush of acknowledgements what is
		// left. Whatever a handler finishes after it is not acknowledged, so
		// SQS redelivers it once its visibility lapses; nothing unfinished is
		// ever deleted.
		deadline := start.Add(st)
		flushBy = deadline
		if !waitUntil(drained, deadline.Add(-st*3/10)) {
			c.cfg.log.Warn("shutdown timeout elapsing; canceling handlers", slog.String("route", c.name))
			hardCancel()
			c.releaseQueued(queues)
			if !waitUntil(drained, deadline.Add(-st/10)) {
				c.abandoned.Store(true)
				c.cfg.log.Error("shutdown timeout exceeded; returning without the handlers and receives still running",
					slog.String("route", c.name), slog.Duration("shutdown_timeout", st))
				// Run again only once the abandoned work has returned.
				stuck = true
				go func() { <-drained; c.running.Store(false) }()
			}
		}
	} else {
		<-drained
	}
	c.ack.stop(flushBy)
	<-ackDone
	return nil
}

// messageAttrs are the attributes of a record about d: cairn's route and
// message_id, and the queue_url, receipt_handle and group_id loafer-awsx's
// records carry, so queries written for those keep matching.
func (c *Consumer) messageAttrs(d *delivery) []slog.Attr {
	return []slog.Attr{slog.String("route", c.name), slog.String("queue_url", c.queueURL),
		slog.String("receipt_handle", deref(d.msg.ReceiptHandle)), slog.String("group_id", d.GroupID()),
		slog.String("message_id", d.ID())}
}

// releaseQueued makes visible again the messages no worker has started. It
// does not wait: a receive still running may queue more, which the workers
// then see under their canceled context.
func (c *Consumer) releaseQueued(queues []chan *delivery) {
	for _, q := range queues {
		for more := true; more; {
			select {
			case d, ok := <-q:
				if more = ok; ok {
					c.finishVisibility(d, 0)
				}
			default:
				more = false
			}
		}
	}
}

// waitUntil waits for done until t and reports whether it closed.
func waitUntil(done <-chan struct{}, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

func (c *Consumer) resolve(ctx context.Context) error {
	if strings.HasPrefix(c.name, "https://") || strings.HasPrefix(c.name, "http://") {
		c.queueURL = c.name
		if i := strings.LastIndexByte(c.name, '/'); i >= 0 {
			c.name = c.name[i+1:]
		}
		return nil
	}
	out, err := c.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.name)})
	if err != nil {
		return merrors.Wrap(merrors.ErrQueueResolve, fmt.Errorf("queue %q: %w", c.name, err))
	}
	if out == nil || out.QueueUrl == nil {
		return merrors.Wrap(merrors.ErrQueueResolve, fmt.Errorf("queue %q: empty URL", c.name))
	}
	c.queueURL = *out.QueueUrl
	return nil
}

func (c *Consumer) poll(ctx context.Context, queues []chan *delivery) {
	want := int(c.route.MaxMessages())
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(c.queueURL),
		MaxNumberOfMessages:         int32(want),
		WaitTimeSeconds:             c.route.WaitTimeSeconds(),
		VisibilityTimeout:           c.route.VisibilityTimeout(),
		MessageSystemAttributeNames: systemAttributeNames,
		MessageAttributeNames:       messageAttributeNames,
	}
	for {
		// Back-pressure: receive only what the pool can take.
		if !c.slots.acquire(ctx, want) {
			return
		}
		out, err := c.client.ReceiveMessage(ctx, in)
		if err != nil {
			c.slots.release(want)
			if ctx.Err() != nil {
				return
			}
			c.cfg.log.Error("receive failed", slog.String("route", c.name),
				slog.Any("error", merrors.Wrap(merrors.ErrGetMessage, err)))
			t := time.NewTimer(c.cfg.retryTimeout)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		n := len(out.Messages)
		if n < want {
			c.slots.release(want - n)
		}
		if n == 0 {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		b := c.track(out.Messages)
		for i := range b.items {
			d := &b.items[i]
			q := queues[0]
			if c.perGroup {
				q = queues[hash(d.groupKey)%uint32(len(queues))]
			}
			q <- d
		}
	}
}

// track registers a received batch with the heartbeat before any of its
// messages is dispatched, so visibility is counted from receive time.
func (c *Consumer) track(msgs []types.Message) *batch {
	b := c.batchPool.Get().(*batch)
	now := c.cfg.clock.Now()
	b.receivedAt, b.visibleUntil = now, now.Add(c.vis)
	b.lapse.Store(b.visibleUntil.UnixNano())
	b.extensions, b.pending, b.gaveUp = 0, len(msgs), false
	b.seq = c.seq.Add(1)
	for i := range msgs {
		b.items = append(b.items, delivery{msg: &msgs[i], b: b, queue: c.name})
		if c.perGroup {
			b.items[i].groupKey = c.groupKey(&b.items[i])
		}
	}
	c.mu.Lock()
	b.next = c.head
	if c.head != nil {
		c.head.prev = b
	}
	c.head = b
	c.mu.Unlock()
	return b
}

// finish marks d done so the heartbeat stops extending it; the last message
// of a batch returns the batch to the pool.
func (c *Consumer) finish(d *delivery) {
	c.finishHeld(d)
	c.slots.release(1)
}

// finishHeld is finish without giving the slot back: a message queued for
// deletion keeps its slot until the delete is sent, so a slow acknowledgement
// path slows receiving instead of growing an unbounded backlog.
func (c *Consumer) finishHeld(d *delivery) {
	b := d.b
	c.mu.Lock()
	d.done = true
	b.pending--
	last := b.pending == 0
	if last {
		if b.prev != nil {
			b.prev.next = b.next
		} else {
			c.head = b.next
		}
		if b.next != nil {
			b.next.prev = b.prev
		}
		b.prev, b.next = nil, nil
	}
	c.mu.Unlock()
	if last {
		clear(b.items)
		b.items = b.items[:0]
		c.batchPool.Put(b)
	}
}

func (c *Consumer) groupKey(d *delivery) string {
	fields := c.route.CustomGroupFields()
	key := d.GroupID()
	if len(fields) > 0 {
		var sb strings.Builder
		sb.WriteString(key)
		for _, f := range fields {
			sb.WriteByte(0)
			sb.WriteString(d.Attribute(f))
		}
		key = sb.String()
	}
	if key == "" {
		// No group: nothing to order, so spread by message ID.
		key = d.ID()
	}
	return key
}

func hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// blockMark remembers a failed message of a group: every later message of
// that group already received (batch seq <= seq) must not run ahead of it.
type blockMark struct {
	seq     uint64
	timeout int32 // visibility given to the failed message; -1 = unchanged
}

func (c *Consumer) work(ctx context.Context, q <-chan *delivery) {
	var blocked map[string]blockMark
	if c.perGroup {
		blocked = make(map[string]blockMark)
	}
	w := newRunner(ctx)
	defer func() { w.cancel(nil) }()
	for d := range q {
		if w.ctx.Err() != nil && ctx.Err() == nil {
			// The heartbeat canceled the last handler: its message is
			// finished, so a fresh context cannot be canceled for it.
			w = newRunner(ctx)
		}
		if ctx.Err() != nil {
			// Shutdown timeout elapsed: the handler never ran, so hand the
			// message back rather than delete it.
			c.finishVisibility(d, 0)
			continue
		}
		if blocked != nil {
			if m, ok := blocked[d.groupKey]; ok {
				if d.b.seq <= m.seq {
					c.cfg.log.LogAttrs(ctx, slog.LevelWarn, "holding message to preserve FIFO group order; earlier message in group failed",
						c.messageAttrs(d)...)
					if m.timeout >= 0 {
						c.finishVisibility(d, m.timeout)
					} else {
						c.finish(d)
					}
					continue
				}
				delete(blocked, d.groupKey)
			}
		}
		// Published before the lapse check: the heartbeat moves the lapse
		// to now before it looks for runners to cancel, so a handler either
		// does not start or is canceled.
		d.runner.Store(w)
		if c.cfg.clock.Now().UnixNano() >= d.b.lapse.Load() {
			// Its visibility lapsed while it waited (extension limit
			// reached): SQS may already have handed it to another consumer,
			// so running it here would only duplicate work.
			c.cfg.log.Warn("visibility lapsed before a worker was free; skipped for redelivery",
				slog.String("route", c.name), slog.String("message_id", d.ID()))
			c.finish(d)
			continue
		}
		key := d.groupKey // d is recycled once outcome finishes it
		if c.dlq != nil {
			if ferr, dead := c.fatal.get(d.ID()); dead {
				// Already failed fatally: SQS redrives it once its receive
				// count passes maxReceiveCount, so hand it straight back
				// without running the handler again.
				c.releaseDead(ctx, d, ferr)
				if blocked != nil {
					blocked[key] = blockMark{seq: c.seq.Load(), timeout: 0}
				}
				continue
			}
		}
		err := c.handler(w.ctx, d)
		if d.backoffSet {
			if cl, _ := merrors.Classify(err); cl != merrors.FatalClass {
				err = merrors.Backoff(err, d.backoff)
			}
		}
		if err != nil && errors.Is(context.Cause(w.ctx), ErrVisibilityLapsed) {
			// SQS may already have handed the message to another consumer:
			// a retry schedule, a DLQ report or a new visibility would act
			// on a delivery that is no longer ours.
			c.cfg.log.Warn("handler failed after its visibility lapsed; message left for redelivery",
				slog.String("route", c.name), slog.String("message_id", d.ID()), slog.Any("error", err))
			c.finish(d)
			if blocked != nil {
				blocked[key] = blockMark{seq: c.seq.Load(), timeout: -1}
			}
			continue
		}
		kept, timeout := c.outcome(ctx, d, err)
		if kept && blocked != nil {
			blocked[key] = blockMark{seq: c.seq.Load(), timeout: timeout}
		}
	}
}

// finishVisibility marks d done and queues a visibility change for it.
func (c *Consumer) finishVisibility(d *delivery, seconds int32) {
	h := d.msg.ReceiptHandle
	c.finish(d)
	c.ack.changeVisibility(h, seconds)
}

// capVisibility bounds a visibility timeout so the message's total
// invisibility never passes the 12 h SQS maximum counted from receipt.
func (c *Consumer) capVisibility(d *delivery, want time.Duration) int32 {
	left := maxVisibility - c.cfg.clock.Now().Sub(d.b.receivedAt)
	want = min(want, left)
	if want <= 0 {
		return 0
	}
	return int32((want + time.Second - 1) / time.Second)
}

// outcome acts on a handler result. It reports whether the message stays in
// the queue and, if so, the visibility it was given (-1 when unchanged).
func (c *Consumer) outcome(ctx context.Context, d *delivery, err error) (kept bool, timeout int32) {
	if c.abandoned.Load() {
		c.cfg.log.Warn("handler returned after the shutdown timeout; message left for redelivery",
			slog.String("route", c.name), slog.String("message_id", d.ID()), slog.Any("error", err))
		c.finish(d)
		return true, -1
	}
	class, delay := merrors.Classify(err)
	if class == merrors.Success {
		h := d.msg.ReceiptHandle
		c.finishHeld(d)
		c.ack.delete(h, true)
		return false, 0
	}
	if c.sched != nil {
		return c.scheduledOutcome(ctx, d, err, class, delay)
	}
	c.cfg.log.LogAttrs(ctx, slog.LevelError, "handler returned an error", append(c.messageAttrs(d),
		slog.String("class", class.String()), slog.Int("receive_count", d.ReceiveCount()), slog.Any("error", err))...)

	dlq := c.dlq
	hasDLQ := dlq != nil
	if class == merrors.FatalClass && hasDLQ {
		c.fatal.put(d.ID(), err)
		c.releaseDead(ctx, d, err)
		return true, 0
	}
	if hasDLQ && d.ReceiveCount() >= dlq.MaxReceiveCount {
		c.observeDLQ(ctx, d, dlq, err)
	}
	switch {
	case class == merrors.BackoffRequested:
		timeout = c.capVisibility(d, delay)
	default:
		base, maxDelay, ok := c.route.RetryBackoff()
		if !ok {
			c.finish(d)
			return true, -1
		}
		timeout = c.capVisibility(d, router.ExpBackoff(base, maxDelay, d.ReceiveCount()))
	}
	c.finishVisibility(d, timeout)
	return true, timeout
}

// releaseDead hands a fatally failed message back at once (visibility 0) so
// the redrive policy moves it without waiting, and reports it to the DLQ
// observer exactly once: on the receive that reaches maxReceiveCount, the
// last one before SQS moves it. Every receive counts, whichever consumer
// makes it, so the observer fires once per message, not once per receive.
func (c *Consumer) releaseDead(ctx context.Context, d *delivery, err error) {
	if d.ReceiveCount() >= c.dlq.MaxReceiveCount {
		c.observeDLQ(ctx, d, c.dlq, err)
		c.fatal.forget(d.ID())
	}
	c.finishVisibility(d, 0)
}

func (c *Consumer) observeDLQ(ctx context.Context, d *delivery, dlq *router.DLQConfig, err error) {
	c.cfg.log.ErrorContext(ctx, "message exhausted; left in source queue for AWS SQS redrive", slog.String("route", c.name),
		slog.String("queue_name", c.route.QueueName()), slog.String("message_id", d.ID()), slog.Int("receive_count", d.ReceiveCount()),
		slog.Int("max_receive_count", dlq.MaxReceiveCount), slog.Any("error", err))
	if c.cfg.dlqMetric != nil {
		c.cfg.dlqMetric(c.name)
	}
	if dlq.OnDLQ != nil {
		dlq.OnDLQ(ctx, d)
	}
}

// semaphore counts free worker-pool slots; pollers wait for a whole batch.
type semaphore struct {
	mu     sync.Mutex
	free   int
	notify chan struct{}
}

func newSemaphore(n int) *semaphore { return &semaphore{free: n, notify: make(chan struct{}, 1)} }

func (s *semaphore) acquire(ctx context.Context, n int) bool {
	for {
		s.mu.Lock()
		if s.free >= n {
			s.free -= n
			more := s.free > 0
			s.mu.Unlock()
			if more {
				s.signal()
			}
			return true
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-s.notify:
		}
	}
}

func (s *semaphore) release(n int) {
	s.mu.Lock()
	s.free += n
	s.mu.Unlock()
	s.signal()
}

func (s *semaphore) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}
