package consumer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

const (
	batchMax           = 10
	maxDeleteFlights   = 4
	heartbeatFraction  = 3 // extend when a third of the timeout is left
	maxHeartbeatPeriod = time.Second
)

// entryIDs are the batch entry IDs; SQS wants them unique per request only.
var entryIDs = func() [batchMax]*string {
	var ids [batchMax]*string
	for i := range ids {
		ids[i] = aws.String(strconv.Itoa(i))
	}
	return ids
}()

type delEntry struct {
	handle  *string
	success bool
}

type visEntry struct {
	handle  *string
	timeout int32
}

// acker batches deletes and visibility changes and runs the heartbeat. Its
// loop sends visibility changes and extensions one request at a time, so a
// failed message's new timeout always lands after any extension covering it.
type acker struct {
	c        *Consumer
	mu       sync.Mutex
	deletes  []delEntry
	changes  []visEntry
	kick     chan struct{}
	arm      chan struct{}
	done     chan struct{}
	flights  chan struct{}
	inflight sync.WaitGroup
	// jobs feeds the maxDeleteFlights delete workers, which live as long as
	// loop: a goroutine per batch cost more than the batch itself.
	jobs chan deleteJob
	// flushBy, set by stop before it closes done, bounds the final flush.
	flushBy time.Time
}

// deleteJob is one batch for a delete worker, by value so that sending it
// allocates nothing.
type deleteJob struct {
	ctx context.Context
	n   int
	del [batchMax]delEntry
}

func newAcker(c *Consumer, capacity int) *acker {
	return &acker{
		c:       c,
		deletes: make([]delEntry, 0, capacity),
		changes: make([]visEntry, 0, capacity),
		kick:    make(chan struct{}, 1),
		arm:     make(chan struct{}, 1),
		done:    make(chan struct{}),
		flights: make(chan struct{}, maxDeleteFlights),
		jobs:    make(chan deleteJob),
	}
}

func (a *acker) delete(h *string, success bool) {
	a.mu.Lock()
	a.deletes = append(a.deletes, delEntry{handle: h, success: success})
	n := len(a.deletes)
	a.mu.Unlock()
	a.poke(n)
}

func (a *acker) changeVisibility(h *string, timeout int32) {
	a.mu.Lock()
	a.changes = append(a.changes, visEntry{handle: h, timeout: timeout})
	n := len(a.changes)
	a.mu.Unlock()
	a.poke(n)
}

func (a *acker) poke(n int) {
	ch := a.arm
	if n >= batchMax {
		ch = a.kick
	} else if n != 1 {
		return
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// stop ends the loop after a final flush, cut off at flushBy when it is set.
func (a *acker) stop(flushBy time.Time) {
	a.flushBy = flushBy
	close(a.done)
}

// loop runs until stop; ctx must not be canceled by shutdown (the caller
// passes context.WithoutCancel) so the final flush still deletes.
func (a *acker) loop(ctx context.Context) {
	var workers sync.WaitGroup
	for range maxDeleteFlights {
		workers.Add(1)
		go func() { defer workers.Done(); a.deleteWorker() }()
	}
	defer func() { close(a.jobs); workers.Wait() }()
	period := min(a.c.vis/heartbeatFraction/2, maxHeartbeatPeriod)
	ticker := a.c.cfg.clock.NewTicker(period)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case <-a.arm:
			if !armed {
				armed = true
				timer.Reset(a.c.cfg.flushInterval)
			}
		case <-a.kick:
			a.flush(ctx, false, false)
		case <-timer.C:
			armed = false
			a.flush(ctx, true, false)
		case <-ticker.C():
			a.heartbeat(ctx)
		case <-a.done:
			timer.Stop()
			by := time.Now().Add(finalFlushTimeout)
			if !a.flushBy.IsZero() {
				by = a.flushBy
			}
			fctx, cancel := context.WithDeadline(ctx, by)
			a.flush(fctx, true, true)
			a.inflight.Wait()
			cancel()
			return
		}
	}
}

// flush sends full batches, and with partial also the remainder.
func (a *acker) flush(ctx context.Context, partial, final bool) {
	for {
		a.mu.Lock()
		nd, nv := len(a.deletes), len(a.changes)
		if nd == 0 && nv == 0 || !partial && nd < batchMax && nv < batchMax {
			a.mu.Unlock()
			break
		}
		var job deleteJob
		var vis []visEntry
		if nd >= batchMax || partial && nd > 0 {
			k := min(nd, batchMax)
			job.n = copy(job.del[:], a.deletes[:k])
			a.deletes = append(a.deletes[:0], a.deletes[k:]...)
		}
		if nv >= batchMax || partial && nv > 0 {
			k := min(nv, batchMax)
			vis = append(make([]visEntry, 0, k), a.changes[:k]...)
			a.changes = append(a.changes[:0], a.changes[k:]...)
		}
		a.mu.Unlock()
		if len(vis) > 0 {
			a.sendVisibility(ctx, vis)
		}
		if job.n > 0 {
			if final {
				a.flights <- struct{}{}
			} else {
				select {
				case a.flights <- struct{}{}:
				default:
					// Every delete flight is busy: keep the entries and
					// leave the loop free for the heartbeat; a finishing
					// flight kicks the loop again.
					a.mu.Lock()
					a.deletes = append(job.del[:job.n:job.n], a.deletes...)
					a.mu.Unlock()
					return
				}
			}
			a.inflight.Add(1)
			job.ctx = ctx
			a.jobs <- job
		}
	}
	a.mu.Lock()
	rest := len(a.deletes) + len(a.changes)
	a.mu.Unlock()
	if rest > 0 {
		// Entries arrived while sending: make sure a timer covers them.
		select {
		case a.arm <- struct{}{}:
		default:
		}
	}
}

// deleteAttempts bounds how often one delete entry is sent. A throttled batch,
// or an entry failed on SQS's side (SenderFault false), is sent again after a
// short backoff: a message left undeleted is handled again and, on a FIFO
// queue, holds up its group until its visibility ends.
const deleteAttempts = 3

// deleteFailed logs each of del as loafer-awsx does, one record per message
// with its receipt handle: SQS hands the message out again once its
// visibility ends.
func (a *acker) deleteFailed(del []delEntry, attrs ...slog.Attr) {
	for _, e := range del {
		a.c.cfg.log.LogAttrs(context.Background(), slog.LevelError, "failed to delete message",
			append([]slog.Attr{slog.String("route", a.c.name), slog.String("queue_url", a.c.queueURL),
				slog.String("receipt_handle", aws.ToString(e.handle))}, attrs...)...)
	}
}

// deleteWorker sends the delete batches it is given until jobs is closed.
func (a *acker) deleteWorker() {
	var entries [batchMax]types.DeleteMessageBatchRequestEntry
	for job := range a.jobs {
		a.sendDeletes(job.ctx, job.del[:job.n], entries[:0])
		<-a.flights
		a.inflight.Done()
		a.c.slots.release(job.n)
		a.poke(batchMax)
		a.poke(1)
	}
}

// sendDeletes deletes del, building each request in buf (reused: the
// client does not keep the request after it returns).
func (a *acker) sendDeletes(ctx context.Context, del []delEntry, buf []types.DeleteMessageBatchRequestEntry) {
	log := a.c.cfg.log
	metric := a.c.cfg.successMetric
	wait := 50 * time.Millisecond
	for attempt := 1; len(del) > 0; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				a.deleteFailed(del, slog.Int("attempts", attempt-1), slog.Any("error", ctx.Err()))
				return
			case <-t.C:
			}
			wait *= 2
		}
		entries := buf[:0]
		for i, e := range del {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: entryIDs[i], ReceiptHandle: e.handle})
		}
		out, err := a.deleteBatch(ctx, &sqs.DeleteMessageBatchInput{
			QueueUrl: &a.c.queueURL, Entries: entries,
		})
		if err != nil {
			if attempt < deleteAttempts && ctx.Err() == nil {
				log.Warn("delete batch failed; retrying", slog.String("route", a.c.name),
					slog.Int("count", len(del)), slog.Int("attempt", attempt), slog.Any("error", err))
				continue
			}
			a.deleteFailed(del, slog.Int("attempts", attempt), slog.Any("error", err))
			return
		}
		failed := make(map[string]types.BatchResultErrorEntry, len(out.Failed))
		for _, f := range out.Failed {
			failed[aws.ToString(f.Id)] = f
		}
		var again []delEntry
		for i, e := range del {
			f, bad := failed[*entryIDs[i]]
			switch {
			case !bad:
				if e.success && metric != nil {
					metric(a.c.name)
				}
			case !f.SenderFault && attempt < deleteAttempts:
				again = append(again, e)
			default:
				a.deleteFailed(del[i:i+1], slog.Int("attempts", attempt), slog.String("code", aws.ToString(f.Code)),
					slog.String("error", aws.ToString(f.Code)+": "+aws.ToString(f.Message)))
			}
		}
		del = again
	}
}

func (a *acker) sendVisibility(ctx context.Context, vis []visEntry) {
	a.sendVisibilityInto(ctx, vis, nil)
}

// sendVisibilityInto is sendVisibility that also reports, when ok is not
// nil, which entries SQS accepted (ok[i] for vis[i]).
func (a *acker) sendVisibilityInto(ctx context.Context, vis []visEntry, ok []bool) {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(vis))
	for i, e := range vis {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
			Id: entryIDs[i], ReceiptHandle: e.handle, VisibilityTimeout: e.timeout,
		}
	}
	out, err := a.visibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: &a.c.queueURL, Entries: entries,
	})
	if err != nil {
		a.c.cfg.log.Warn("change visibility batch failed", slog.String("route", a.c.name), slog.Any("error", err))
		return
	}
	for i := range ok {
		ok[i] = true
	}
	for _, f := range out.Failed {
		// A message deleted or redelivered meanwhile has a stale handle.
		a.c.cfg.log.Debug("change visibility failed", slog.String("route", a.c.name),
			slog.String("code", aws.ToString(f.Code)))
		if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i >= 0 && i < len(ok) {
			ok[i] = false
		}
	}
}

// heartbeat extends the visibility of every unfinished received message
// whose timeout is about to lapse, counted from its receive time, up to the
// route's extension limit and never past 12 h after receipt.
//
// A batch counts as extended only once SQS accepted the extension of each of
// its unfinished messages: a failed extension leaves it due, so the next
// tick tries again, and a batch that lapses without one is given up, so its
// waiting messages are not run on a delivery SQS may already have handed to
// another consumer. A batch that is due but cannot be extended (limit used,
// 12 h reached) is given up as well, a third of the timeout before it
// lapses: its running handlers are canceled with ErrVisibilityLapsed and
// logged at Error, so they can stop before SQS redelivers their messages.
func (a *acker) heartbeat(ctx context.Context) {
	c := a.c
	limit := c.route.ExtensionLimit()
	now := c.cfg.clock.Now()
	margin := c.vis / heartbeatFraction
	type extension struct {
		b        *batch
		seq      uint64
		until    time.Time
		from, to int // its entries in due
	}
	var due []visEntry
	var exts []extension
	var lapsed []lapse
	c.mu.Lock()
	for b := c.head; b != nil; b = b.next {
		if b.gaveUp || now.Before(b.visibleUntil.Add(-margin)) {
			continue
		}
		left := maxVisibility - now.Sub(b.receivedAt)
		ext := min(c.vis, left)
		if b.extensions >= limit || ext < time.Second || !now.Before(b.visibleUntil) {
			// Out of extensions, at the 12 h maximum, or lapsed unextended
			// (its extensions failed): SQS redelivers its messages when
			// the visibility ends, or already has.
			lapsed = c.giveUp(b, now, lapsed)
			continue
		}
		secs := int32(ext / time.Second)
		from := len(due)
		for i := range b.items {
			if !b.items[i].done {
				due = append(due, visEntry{handle: b.items[i].msg.ReceiptHandle, timeout: secs})
			}
		}
		exts = append(exts, extension{b: b, seq: b.seq, until: now.Add(time.Duration(secs) * time.Second), from: from, to: len(due)})
	}
	c.mu.Unlock()
	for _, l := range lapsed {
		c.cfg.log.Error("visibility can no longer be extended; handler canceled, SQS will redeliver the message",
			slog.String("route", c.name), slog.String("message_id", l.id), slog.Int("extensions", l.extensions),
			slog.Time("visible_until", l.until), slog.Any("cause", ErrVisibilityLapsed))
	}
	ok := make([]bool, len(due))
	for i := 0; i < len(due); i += batchMax {
		k := min(i+batchMax, len(due))
		a.sendVisibilityInto(ctx, due[i:k], ok[i:k])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range exts {
		if !slices.Contains(ok[e.from:e.to], false) && c.linked(e.b, e.seq) {
			e.b.extensions++
			e.b.visibleUntil = e.until
			e.b.lapse.Store(e.until.UnixNano())
		}
	}
}

// lapse describes a running handler canceled by giveUp, for the log.
type lapse struct {
	id         string
	extensions int
	until      time.Time
}

// giveUp stops the batch's extensions: its messages that no worker has
// started are skipped (the lapse moves to now), and its running handlers are
// canceled with ErrVisibilityLapsed. The caller holds c.mu, under which a
// delivery's done flag changes, so a finished message's worker, already on
// its next message, is never canceled.
func (c *Consumer) giveUp(b *batch, now time.Time, out []lapse) []lapse {
	b.gaveUp = true
	b.lapse.Store(min(b.lapse.Load(), now.UnixNano()))
	for i := range b.items {
		d := &b.items[i]
		if d.done {
			continue
		}
		if r := d.runner.Load(); r != nil {
			r.cancel(ErrVisibilityLapsed)
			out = append(out, lapse{id: d.ID(), extensions: b.extensions, until: b.visibleUntil})
		}
	}
	return out
}

// linked reports whether b is still in the in-flight list as the batch
// numbered seq: a batch whose messages all finished is recycled for another
// receive. The caller holds c.mu.
func (c *Consumer) linked(b *batch, seq uint64) bool {
	for x := c.head; x != nil; x = x.next {
		if x == b {
			return x.seq == seq
		}
	}
	return false
}

// deleteBatch sends one DeleteMessageBatch for a router.WithDeleteBatch
// route, or else one DeleteMessage per entry with the failures reported the
// batch way. Batching is the route's choice, as in loafer-awsx: a program's
// tests that count DeleteMessage calls keep their meaning.
func (a *acker) deleteBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput) (*sqs.DeleteMessageBatchOutput, error) {
	if a.c.route.DeleteBatch() {
		out, err := a.c.client.(BatchDeleteClient).DeleteMessageBatch(ctx, in)
		if err == nil && out == nil {
			out = &sqs.DeleteMessageBatchOutput{}
		}
		return out, err
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		if _, err := a.c.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: in.QueueUrl, ReceiptHandle: e.ReceiptHandle}); err != nil {
			out.Failed = append(out.Failed, failure(e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// visibilityBatch is deleteBatch for visibility changes.
func (a *acker) visibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if b, ok := a.c.client.(BatchVisibilityClient); ok {
		return b.ChangeMessageVisibilityBatch(ctx, in)
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if _, err := a.c.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: in.QueueUrl, ReceiptHandle: e.ReceiptHandle, VisibilityTimeout: e.VisibilityTimeout,
		}); err != nil {
			out.Failed = append(out.Failed, failure(e.Id, err))
			continue
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// failure reports a single call's error as a batch entry failure; only an
// API error the client caused (an invalid receipt handle) is a sender fault,
// so throttles and network errors are sent again.
func failure(id *string, err error) types.BatchResultErrorEntry {
	code, sender := "Error", false
	var api smithy.APIError
	if errors.As(err, &api) {
		code, sender = api.ErrorCode(), api.ErrorFault() == smithy.FaultClient
	}
	return types.BatchResultErrorEntry{Id: id, Code: aws.String(code), Message: aws.String(err.Error()), SenderFault: sender}
}
