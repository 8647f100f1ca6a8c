package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Backoff bounds for failed deliveries: the delay doubles from MinBackoff per
// attempt up to MaxBackoff.
const (
	MinBackoff = time.Second
	MaxBackoff = 15 * time.Minute
)

// Queue implements [worlds.World]. A delivery with opts.ID that is already queued
// is not queued twice: it keeps one row, due at the earlier of the two times. If
// that delivery is running when it is queued again, it runs once more after it
// finishes, at the new due time, so a wake-up that raced with its own delivery is
// not lost.
func (w *World) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	q, err := w.prepareQueue(in, opts)
	if err != nil {
		return "", err
	}
	if err := w.write(ctx, func(tx *wtx) error { return w.queueTx(ctx, tx, q.id, q.in, q.due) }); err != nil {
		return "", err
	}
	w.signal()
	return q.id, nil
}

// queued is a validated delivery, ready for queueTx.
type queued struct {
	id  string
	in  worlds.QueueInput
	due time.Time
}

// prepareQueue validates a delivery and settles its ID and due time.
func (w *World) prepareQueue(in worlds.QueueInput, opts worlds.QueueOptions) (queued, error) {
	if err := in.Validate(); err != nil {
		return queued{}, err
	}
	now := w.now()
	due := opts.DueAt
	if due.IsZero() || due.Before(now) {
		due = now
	}
	if w.cfg.MaxDelay > 0 && due.Sub(now) > w.cfg.MaxDelay {
		return queued{}, &worlds.ArgumentError{Field: "QueueOptions.DueAt", Value: opts.DueAt, Reason: fmt.Sprintf("more than MaxDelay %s ahead", w.cfg.MaxDelay)}
	}
	id := opts.ID
	if id == "" {
		id = w.cfg.NewID()
	}
	return queued{id: id, in: in, due: due}, nil
}

// CancelDelivery implements [worlds.DeliveryCanceller]: it deletes the queued
// delivery id unless a worker holds an unexpired lease on it, in which case the
// delivery finishes (or is retried) as usual. An unknown or already delivered id
// is not an error.
func (w *World) CancelDelivery(ctx context.Context, id string) error {
	if id == "" {
		return &worlds.ArgumentError{Field: "id", Value: id, Reason: "required"}
	}
	var deleted bool
	err := w.write(ctx, func(tx *wtx) error {
		// A lease that ran out belongs to a worker that died: the row is pending again.
		res, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE id = ? AND (claim = '' OR lease_until <= ?)`, id, w.cfg.wall().UnixNano())
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		deleted = n == 1
		return nil
	})
	if err != nil {
		return fmt.Errorf("local: cancel delivery %s: %w", id, err)
	}
	if deleted {
		// The dispatcher may be sleeping until this delivery's due time: let it
		// look at the earliest one again.
		w.signal()
	}
	return nil
}

func (w *World) queueTx(ctx context.Context, tx *wtx, id string, in worlds.QueueInput, due time.Time) error {
	body, err := worlds.MarshalQueueInput(in)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO deliveries (id, input, due_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET gen = gen + 1,
			due_at = CASE WHEN claim = '' THEN MIN(due_at, excluded.due_at) ELSE excluded.due_at END`, id, body, nanos(due))
	return err
}

// signal wakes the dispatcher to look at the earliest due time again.
func (w *World) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

type claimed struct {
	worlds.Delivery
	claim string
	gen   int64
}

// claim leases the earliest due delivery; with none due it returns the time the
// next one is due (zero when the queue is empty).
func (w *World) claim(ctx context.Context) (*claimed, time.Time, error) {
	// Look before taking the write lock, so idle workers polling a shared file do
	// not serialize its writers.
	var one int
	err := w.db.QueryRowContext(ctx, `SELECT 1 FROM deliveries WHERE due_at <= ? AND lease_until <= ? LIMIT 1`,
		nanos(w.now()), w.cfg.wall().UnixNano()).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		next, err := w.nextDue(ctx, w.db)
		return nil, next, err
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	var c *claimed
	var next time.Time
	err = w.write(ctx, func(tx *wtx) error {
		c, next = nil, time.Time{}
		now, wall := nanos(w.now()), w.cfg.wall().UnixNano()
		var id string
		var due, leaseUntil int64
		err := tx.QueryRowContext(ctx, `SELECT id, due_at, lease_until FROM deliveries
			WHERE due_at <= ? AND lease_until <= ? ORDER BY due_at LIMIT 1`, now, wall).Scan(&id, &due, &leaseUntil)
		if errors.Is(err, sql.ErrNoRows) { // another worker took it
			next, err = w.nextDue(ctx, tx)
			return err
		}
		if err != nil {
			return err
		}
		token := w.cfg.NewID()
		var body []byte
		d := &claimed{claim: token}
		err = tx.QueryRowContext(ctx, `UPDATE deliveries SET attempt = attempt + 1, lease_until = ?, claim = ?
			WHERE id = ? RETURNING input, due_at, attempt, gen`, wall+int64(w.cfg.Lease), token, id).Scan(&body, &due, &d.Attempt, &d.gen)
		if err != nil {
			return err
		}
		d.ID, d.DueAt = id, fromNanos(due)
		in, err := worlds.UnmarshalQueueInput(body)
		if err != nil {
			// Not a delivery this build understands: drop it rather than retry forever.
			w.cfg.Logger.Error("local: dropping undecodable delivery", "id", id, "err", err)
			_, err = tx.ExecContext(ctx, `DELETE FROM deliveries WHERE id = ?`, id)
			return err
		}
		d.Input = in
		c = d
		return nil
	})
	return c, next, err
}

// nextDue returns when the queue next needs looking at: the earliest due time of
// an unclaimed delivery or the end of the earliest lease, zero when empty.
func (w *World) nextDue(ctx context.Context, q querier) (time.Time, error) {
	wall := w.cfg.wall().UnixNano()
	var next time.Time
	var n sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT MIN(due_at) FROM deliveries WHERE lease_until <= ?`, wall).Scan(&n); err != nil {
		return next, err
	}
	if n.Valid {
		next = fromNanos(n.Int64)
	}
	var l sql.NullInt64 // a claim that expires returns to the queue: look again then
	if err := q.QueryRowContext(ctx, `SELECT MIN(lease_until) FROM deliveries WHERE lease_until > ?`, wall).Scan(&l); err != nil {
		return next, err
	}
	if l.Valid {
		// Leases are wall-clock; convert to the World clock the caller compares with.
		at := w.now().Add(time.Duration(l.Int64 - wall))
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, nil
}

// finish records the outcome of a claimed delivery: deleted on success unless it
// was queued again meanwhile, otherwise rescheduled with backoff. A claim that
// lost its lease to another worker changes nothing.
func (w *World) finish(ctx context.Context, d *claimed, runErr error, shutdown bool) error {
	deleted := false
	defer func() {
		if !deleted {
			// Due again, now or later: the dispatcher may be sleeping past that.
			w.signal()
		}
	}()
	return w.write(ctx, func(tx *wtx) error {
		now := w.now()
		if runErr == nil {
			res, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE id = ? AND claim = ? AND gen = ?`, d.ID, d.claim, d.gen)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				deleted = true
				return nil
			}
			_, err = tx.ExecContext(ctx, `UPDATE deliveries SET lease_until = 0, claim = '', attempt = 0 WHERE id = ? AND claim = ?`, d.ID, d.claim)
			return err
		}
		if shutdown {
			// Interrupted by shutdown, not failed: due again at once. The attempt still
			// counts, so the next receive reports a redelivery.
			_, err := tx.ExecContext(ctx, `UPDATE deliveries SET lease_until = 0, claim = '', due_at = ? WHERE id = ? AND claim = ?`,
				nanos(now), d.ID, d.claim)
			return err
		}
		// Queued again while it ran: the earlier of the retry and the new due time.
		_, err := tx.ExecContext(ctx, `UPDATE deliveries SET lease_until = 0, claim = '',
			due_at = CASE WHEN gen = ? THEN ? ELSE MIN(due_at, ?) END WHERE id = ? AND claim = ?`,
			d.gen, nanos(now.Add(backoff(d.Attempt))), nanos(now.Add(backoff(d.Attempt))), d.ID, d.claim)
		return err
	})
}

func (w *World) renew(ctx context.Context, d *claimed) error {
	return w.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE deliveries SET lease_until = ? WHERE id = ? AND claim = ?`,
			w.cfg.wall().UnixNano()+int64(w.cfg.Lease), d.ID, d.claim)
		return err
	})
}

func backoff(attempt int) time.Duration {
	d := MinBackoff
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// Serve implements [worlds.Server]: Config.Workers deliveries at a time are
// claimed as they come due and run with runner; expiry deliveries are handled by
// the World itself. Idle, it sleeps until the earliest due delivery, a new Queue
// call, or Config.PollInterval. It returns nil when ctx ends, after the
// deliveries in flight have returned (they see ctx cancelled and are released to
// run again at once), and [ErrClosed] if the World is closed under it.
func (w *World) Serve(ctx context.Context, runner worlds.Runner) error {
	if runner == nil {
		return &worlds.ArgumentError{Field: "runner", Value: nil, Reason: "required"}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, w.cfg.Workers)
	sv := &serving{ctx: ctx, runner: runner, slots: slots, wg: &wg, names: runner.Workflows()}
	w.addServing(sv)
	defer w.removeServing(sv) // before wg.Wait: no eager start joins wg after
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	failures := 0
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		d, next, err := w.claim(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && w.isClosed() {
			return ErrClosed
		}
		if err != nil {
			failures++
			w.cfg.Logger.Error("local: claiming a delivery", "err", err)
			next = w.now().Add(min(time.Duration(failures)*100*time.Millisecond, w.cfg.PollInterval))
		} else {
			failures = 0
		}
		if d != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.deliver(ctx, runner, d, nil, sync.OnceFunc(func() { <-slots }))
			}()
			continue
		}
		// Idle, the dispatcher holds no worker, so an eager start can have it.
		<-slots
		wait := w.cfg.PollInterval
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(w.now()), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
			timer.Stop() // Go 1.23 timers: no stale tick survives Stop
		case <-timer.C:
		}
	}
}

// deliver runs a claimed delivery with runner, renewing its lease meanwhile,
// and records its outcome. The runner is given a [deliveryWorld], or ew for
// an eager start's delivery, which has nothing to record when it never wrote
// its run. release gives back the worker; it may be called once the run has
// ended, and is called at the latest once the delivery has run, since
// recording the outcome is no work the lease leaves to anyone else. A
// dispatcher waiting for a worker has it then; one sleeping is woken only
// when the outcome leaves the delivery due again.
func (w *World) deliver(ctx context.Context, runner worlds.Runner, d *claimed, ew *eagerWorld, release func()) {
	stop := make(chan struct{})
	var hb sync.WaitGroup
	hb.Add(1)
	go func() {
		defer hb.Done()
		t := time.NewTicker(w.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := w.renew(ctx, d); err != nil && ctx.Err() == nil {
					w.cfg.Logger.Warn("local: renewing a delivery lease", "id", d.ID, "err", err)
				}
			}
		}
	}()
	var err error
	if d.Input.Kind == worlds.DeliverExpire {
		err = w.expire(ctx, d.Input.RunID)
	} else if ew != nil {
		err = safeRun(ctx, runner, ew, d.Delivery)
	} else {
		err = safeRun(ctx, runner, &deliveryWorld{World: w, runID: d.Input.RunID, release: release}, d.Delivery)
	}
	close(stop)
	hb.Wait()
	release()
	if ew != nil && !ew.isCreated() {
		return
	}
	shutdown := err != nil && ctx.Err() != nil
	if err != nil && !shutdown {
		w.cfg.Logger.Warn("local: delivery failed", "id", d.ID, "kind", d.Input.Kind, "run", d.Input.RunID, "attempt", d.Attempt, "err", err)
	}
	// The outcome is recorded even after shutdown began, so nothing runs twice needlessly.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.BusyTimeout)
	defer cancel()
	if ferr := w.finish(fctx, d, err, shutdown); ferr != nil {
		w.cfg.Logger.Error("local: recording a delivery outcome", "id", d.ID, "err", ferr)
	}
}

func safeRun(ctx context.Context, runner worlds.Runner, w worlds.World, d worlds.Delivery) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("local: runner panicked: %v", p)
		}
	}()
	return runner.Run(ctx, w, d)
}

// expire deletes a finished run and everything it owns. A run that is not
// finished (it cannot be, unless the file was edited) is kept.
func (w *World) expire(ctx context.Context, runID string) error {
	return w.write(ctx, func(tx *wtx) error {
		run, err := getRun(ctx, tx, runID)
		if errors.Is(err, worlds.ErrRunNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !run.Status.Terminal() {
			return nil
		}
		for _, q := range []string{
			`DELETE FROM tokens WHERE hook_id IN (SELECT hook_id FROM hooks WHERE run_id = ?)`,
			`DELETE FROM hooks WHERE run_id = ?`,
			`DELETE FROM events WHERE run_id = ?`,
			`DELETE FROM steps WHERE run_id = ?`,
			`DELETE FROM waits WHERE run_id = ?`,
			`DELETE FROM chunks WHERE run_id = ?`,
			`DELETE FROM streams WHERE run_id = ?`,
			`DELETE FROM run_attributes WHERE run_id = ?`,
			`DELETE FROM runs WHERE run_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, runID); err != nil {
				return err
			}
		}
		return nil
	})
}

// pendingDeliveries counts queued deliveries, for tests.
func (w *World) pendingDeliveries(ctx context.Context) (int, error) {
	var n int
	err := w.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries`).Scan(&n)
	return n, err
}

// deliveryWorld is the World a delivery runs against: the World itself, except
// that the append that ends the delivery's run gives back the delivery's
// worker (release, which must be safe to call twice) as it commits, before
// waiters can see the end. What the delivery does after that is bookkeeping,
// and a waiter that hears of the end and starts its next run at once finds
// the worker free to start it eagerly.
type deliveryWorld struct {
	*World
	runID   string
	release func()
}

// Append implements [worlds.World].
func (dw *deliveryWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	if runID != dw.runID {
		return dw.World.Append(ctx, runID, events...)
	}
	return dw.World.appendAndQueue(ctx, runID, events, with{ended: dw.release})
}

// Unwrap returns the World, so the workflow runtime's run cache knows an
// execution cached by one delivery for the next delivery's.
func (dw *deliveryWorld) Unwrap() worlds.World { return dw.World }
