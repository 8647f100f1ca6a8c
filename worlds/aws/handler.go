package awsworld

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
)

// Queue handler timing.
const (
	// DefaultLease is Config.Lease when it is zero.
	DefaultLease = 60 * time.Second
	// HeartbeatInterval is how often a running delivery's lease and visibility are
	// extended with the default lease: every half lease, so a worker that dies
	// releases the delivery within two missed heartbeats.
	HeartbeatInterval = DefaultLease / 2
	// MinRetryDelay and MaxRetryDelay bound the failure backoff, which doubles with
	// each receive of a message.
	MinRetryDelay = time.Second
	MaxRetryDelay = 15 * time.Minute
)

// RetryDelay is the visibility timeout a failed delivery gets on its
// receiveCount-th receive: one second doubling up to 15 minutes.
func RetryDelay(receiveCount int) time.Duration {
	if receiveCount < 1 {
		receiveCount = 1
	}
	if receiveCount > 11 { // 2^10 s already exceeds the cap
		return MaxRetryDelay
	}
	return min(MinRetryDelay<<(receiveCount-1), MaxRetryDelay)
}

// SQSHandler is the shape of an SQS Lambda handler reporting partial batch failures.
type SQSHandler = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Queue returns the SQS Lambda handler that executes deliveries with runner. Wire
// it only to SQS event source mappings with ReportBatchItemFailures enabled:
//
//	lambda.Start(awsworld.Queue(world, worlds.Runners(workflow.Use(flows.GenerateReport))))
//
// It claims each message's QUEUE# record with a lease (acknowledging a message
// without one; failing, for later, one whose record another receiver holds, so
// duplicate messages of a delivery take turns), sends an early message again with
// its remaining delay, and otherwise runs the delivery, extending the lease and
// the message's visibility every half Config.Lease, and deletes the record. A failed delivery is reported in BatchItemFailures with a visibility
// backoff doubling from one second per receive up to 15 minutes. Once the batch is
// halfway to the invocation's deadline, the remaining messages are handed back with
// their visibility reset so another invocation takes them at once.
//
// A nil runner is allowed for a worker that only expires runs; every other
// delivery then fails with worlds.ErrNoRunner until it reaches the dead-letter queue.
func Queue(world *World, runner worlds.Runner) SQSHandler {
	if runner == nil {
		runner = worlds.Runners()
	}
	return newHandler(world, runner).handle
}

type handler struct {
	w      *World
	runner worlds.Runner
	log    *slog.Logger
	now    func() time.Time
	// wall is the real clock the invocation deadline is measured on; now is the
	// World's clock that due times are compared with.
	wall func() time.Time
	// tick returns a channel ticking every d and a stop function.
	tick func(d time.Duration) (<-chan time.Time, func())
	// processFn handles one message; tests replace it.
	processFn func(ctx context.Context, r events.SQSMessage) error
}

func newHandler(w *World, runner worlds.Runner) *handler {
	h := &handler{w: w, runner: runner, log: w.log, now: w.now, wall: time.Now, tick: func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	}}
	h.processFn = h.process
	return h
}

func (h *handler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	fail := func(r events.SQSMessage) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
	}
	start := h.wall()
	var handOff time.Time
	if dl, ok := ctx.Deadline(); ok {
		handOff = start.Add(dl.Sub(start) / 2)
	}
	failedGroups := map[string]bool{}
	for i, r := range ev.Records {
		if !handOff.IsZero() && !h.wall().Before(handOff) {
			for _, rest := range ev.Records[i:] {
				h.setVisibility(ctx, rest, 0)
				fail(rest)
			}
			break
		}
		// A FIFO group stays in order: after one of its messages fails, the rest wait.
		if g := r.Attributes["MessageGroupId"]; g != "" && failedGroups[g] {
			fail(r)
			continue
		}
		mctx := ctx
		if !handOff.IsZero() {
			mctx = worlds.WithHandOff(ctx, handOff)
		}
		if err := h.processSafely(mctx, r); err != nil {
			count, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
			delay := RetryDelay(count)
			var held *leaseHeldError
			if errors.As(err, &held) {
				// Another receiver is executing this delivery: look again with the
				// usual backoff, and no later than the lease's end. Usually it has
				// finished by then and this message is acknowledged as delivered.
				delay = min(delay, max(held.until.Sub(h.wall()), 0)+time.Second)
				h.log.DebugContext(ctx, "awsworld: delivery held by another receiver", "id", held.id, "until", held.until, "retryIn", delay)
			} else {
				h.log.WarnContext(ctx, "awsworld: delivery failed", "messageId", r.MessageId, "receiveCount", count, "retryIn", delay, "err", err)
			}
			h.setVisibility(ctx, r, delay)
			fail(r)
			if g := r.Attributes["MessageGroupId"]; g != "" {
				failedGroups[g] = true
			}
		}
	}
	return resp, nil
}

// PanicError reports a delivery whose execution panicked. The Queue handler
// recovers it, reports that message failed, and goes on with the batch.
type PanicError struct {
	// ID is the delivery ID, empty when the panic came before its record was read.
	ID string
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *PanicError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("awsworld: delivery panicked: %v", e.Value)
	}
	return fmt.Sprintf("awsworld: delivery %s panicked: %v", e.ID, e.Value)
}

// processSafely is processFn with a panic turned into a *PanicError, so one
// message's panic fails only that message.
func (h *handler) processSafely(ctx context.Context, r events.SQSMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
			h.log.ErrorContext(ctx, "awsworld: message handling panicked", "messageId", r.MessageId, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	return h.processFn(ctx, r)
}

// process handles one message; a nil error acknowledges it.
func (h *handler) process(ctx context.Context, r events.SQSMessage) error {
	var m message
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil || m.ID == "" {
		h.log.WarnContext(ctx, "awsworld: acknowledging a message that is not a queue message", "messageId", r.MessageId, "bodyBytes", len(r.Body))
		h.log.DebugContext(ctx, "awsworld: the message that is not a queue message", "messageId", r.MessageId, "body", r.Body)
		return nil
	}
	rec, err := h.w.claimRecord(ctx, m.ID, h.wall())
	if err != nil {
		if errors.Is(err, worlds.ErrInvalidArgument) {
			h.log.WarnContext(ctx, "awsworld: acknowledging an unreadable queue record", "id", m.ID, "err", err)
			return nil
		}
		return err
	}
	if rec == nil {
		h.log.DebugContext(ctx, "awsworld: acknowledging a message without a queue record", "id", m.ID)
		return nil // delivered already, or expired with its run
	}
	if now := h.now(); rec.DueAt.After(now) {
		h.log.DebugContext(ctx, "awsworld: early delivery sent again", "id", rec.ID, "dueIn", rec.DueAt.Sub(now))
		q, ok := h.w.queues[rec.Queue]
		if !ok {
			q = h.w.queueFor(rec.Input.WorkflowName)
		}
		err := h.w.publish(ctx, rec.ID, q, rec.Input.RunID, rec.DueAt)
		return errors.Join(err, h.w.releaseRecord(context.WithoutCancel(ctx), rec, h.wall()))
	}
	stop := h.heartbeat(ctx, r, rec)
	// The record counts executions of the delivery across all its messages, so
	// a duplicate message that runs after a failed execution knows it is a retry.
	err = h.run(ctx, rec, max(rec.attempts, 1))
	stop()
	if err == nil {
		// Not deleted, the record is run again: harmless, the runtime is idempotent.
		err = h.w.deleteRecord(context.WithoutCancel(ctx), rec)
	}
	if err != nil {
		if rerr := h.w.releaseRecord(context.WithoutCancel(ctx), rec, h.wall()); rerr != nil {
			h.log.WarnContext(ctx, "awsworld: releasing a failed delivery; its retry waits for the lease", "id", rec.ID, "err", rerr)
		}
	}
	return err
}

func (h *handler) run(ctx context.Context, rec *record, attempt int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			pe := &PanicError{ID: rec.ID, Value: p, Stack: debug.Stack()}
			h.log.ErrorContext(ctx, "awsworld: delivery panicked", "id", rec.ID, "runId", rec.Input.RunID, "kind", rec.Input.Kind, "panic", fmt.Sprint(p), "stack", string(pe.Stack))
			err = pe
		}
	}()
	if rec.Input.Kind == worlds.DeliverExpire {
		// A deferred expiry re-armed the record under a new due time, so the
		// conditional delete that follows keeps it.
		if err := h.w.expire(ctx, rec.Input.RunID); err != nil && !errors.Is(err, errDeferred) {
			return err
		}
		return nil
	}
	return h.runner.Run(ctx, h.w, worlds.Delivery{ID: rec.ID, Input: rec.Input, DueAt: rec.DueAt, Attempt: attempt})
}

// heartbeat extends the delivery's lease and its message's visibility every half
// lease until stopped.
func (h *handler) heartbeat(ctx context.Context, r events.SQSMessage, rec *record) (stop func()) {
	ticks, stopTicker := h.tick(h.w.cfg.Lease / 2)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticks:
				if err := h.w.renewLease(ctx, rec, h.wall()); err != nil {
					h.log.WarnContext(ctx, "awsworld: renewing a delivery lease", "id", rec.ID, "err", err)
				}
				h.setVisibility(ctx, r, h.w.cfg.Lease)
			}
		}
	}()
	return func() {
		stopTicker()
		close(done)
		<-finished
	}
}

func (h *handler) setVisibility(ctx context.Context, r events.SQSMessage, d time.Duration) {
	url, err := h.queueURL(r.EventSourceARN)
	if err != nil {
		h.log.WarnContext(ctx, "awsworld: cannot change visibility", "messageId", r.MessageId, "err", err)
		return
	}
	_, err = h.w.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: int32(d / time.Second),
	})
	if err != nil {
		h.log.WarnContext(ctx, "awsworld: change visibility", "messageId", r.MessageId, "err", err)
	}
}

// queueURL finds the configured queue of an event source ARN by its name, or
// builds the standard SQS URL from the ARN.
func (h *handler) queueURL(arn string) (string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return "", fmt.Errorf("awsworld: event source %q is not an SQS queue ARN", arn)
	}
	for _, q := range h.w.queues {
		if q.ARN == arn || path.Base(q.URL) == parts[5] {
			return q.URL, nil
		}
	}
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", parts[3], parts[4], parts[5]), nil
}
