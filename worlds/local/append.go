package local

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-go/cairn/worlds"
)

// Append implements [worlds.World]: one immediate transaction reads the run, plans
// the events with [worlds.Plan] against state read inside it, and writes the events
// and every projection they change, guarded by the run's event count.
func (w *World) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	return w.appendAndQueue(ctx, runID, events, with{})
}

// AppendAndQueue implements [worlds.AppendQueuer]: the events and the delivery
// are written in the same transaction as Append's.
func (w *World) AppendAndQueue(ctx context.Context, runID string, events []worlds.Event, in worlds.QueueInput, opts worlds.QueueOptions) ([]worlds.Event, error) {
	q, err := w.prepareQueue(in, opts)
	if err != nil {
		return nil, err
	}
	out, err := w.appendAndQueue(ctx, runID, events, with{q: &q})
	if err == nil {
		w.signal()
	}
	return out, err
}

// with is what an append writes or does besides the events.
type with struct {
	// q, if not nil, is queued in the same transaction.
	q *queued
	// start, if not nil, is an eager start's claimed delivery, written in the
	// same transaction; the events are stamped with its time.
	start *eagerStart
	// ended, if not nil, is called when the append ends the run, just before
	// it commits: before any waiter can see the end. Should the commit fail
	// after all, it has been called anyway.
	ended func()
}

// appendAndQueue appends events, with what x adds, in one transaction.
func (w *World) appendAndQueue(ctx context.Context, runID string, events []worlds.Event, x with) ([]worlds.Event, error) {
	q, start := x.q, x.start
	if runID == "" {
		return nil, &worlds.ArgumentError{Field: "runID", Value: `""`, Reason: "required"}
	}
	var out []worlds.Event
	var terminal bool
	err := w.write(ctx, func(tx *wtx) error {
		out, terminal = nil, false
		run, err := getRun(ctx, tx, runID)
		if err != nil && !errors.Is(err, worlds.ErrRunNotFound) {
			return err
		}
		now := w.now()
		if start != nil {
			now = start.at
		}
		effects, err := worlds.Plan(ctx, runID, run, events, now, txLoader{tx})
		if err != nil {
			return err
		}
		if err := w.checkSizes(effects); err != nil {
			return err
		}
		for i := range effects {
			if err := writeEffect(ctx, tx, &effects[i]); err != nil {
				return err
			}
			out = append(out, effects[i].Event)
		}
		final := effects[len(effects)-1].Run
		data, err := json.Marshal(final)
		if err != nil {
			return err
		}
		if run == nil {
			_, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, workflow_name, status, created_at, event_count, data) VALUES (?, ?, ?, ?, ?, ?)`,
				runID, final.WorkflowName, string(final.Status), nanos(final.CreatedAt), final.EventCount, data)
			if isConstraint(err) {
				return errRetry
			}
			if err != nil {
				return err
			}
		} else {
			res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, event_count = ?, data = ? WHERE run_id = ? AND event_count = ?`,
				string(final.Status), final.EventCount, data, runID, run.EventCount)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return errRetry
			}
		}
		if final.Status.Terminal() && (run == nil || !run.Status.Terminal()) {
			terminal = true
			if w.cfg.Retention > 0 {
				if err := w.queueTx(ctx, tx, "expire-"+runID, worlds.QueueInput{Kind: worlds.DeliverExpire, WorkflowName: final.WorkflowName, RunID: runID}, now.Add(w.cfg.Retention)); err != nil {
					return err
				}
			}
		}
		if start != nil {
			if err := w.claimTx(ctx, tx, start); err != nil {
				return err
			}
		}
		if q != nil {
			if err := w.queueTx(ctx, tx, q.id, q.in, q.due); err != nil {
				return err
			}
		}
		if terminal && x.ended != nil {
			// Before the commit, which a waiter polling the run may see
			// before this goroutine runs again.
			x.ended()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if terminal {
		w.notifyRun(runID)
		if w.cfg.Retention > 0 {
			w.signal()
		}
	}
	return out, nil
}

func (w *World) checkSizes(effects []worlds.Effect) error {
	max := w.cfg.MaxItemBytes
	if max <= 0 {
		return nil
	}
	for i := range effects {
		e := &effects[i]
		items := []struct {
			name string
			v    any
		}{{"event", e.Event}, {"run", e.Run}}
		if e.Step != nil {
			items = append(items, struct {
				name string
				v    any
			}{"step", e.Step})
		}
		if e.Hook != nil {
			items = append(items, struct {
				name string
				v    any
			}{"hook", e.Hook})
		}
		for _, it := range items {
			b, err := json.Marshal(it.v)
			if err != nil {
				return err
			}
			if len(b) > max {
				return &worlds.EventError{
					Kind: worlds.ErrEventInvalid, Cause: worlds.ErrItemTooLarge, RunID: e.Event.RunID,
					Type: e.Event.Type, CorrelationID: e.Event.CorrelationID, Field: it.name,
					Reason: fmt.Sprintf("%d bytes stored, limit %d", len(b), max),
				}
			}
		}
	}
	return nil
}

func writeEffect(ctx context.Context, tx *wtx, e *worlds.Effect) error {
	ev, err := json.Marshal(e.Event)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (run_id, seq, data) VALUES (?, ?, ?)`, e.Event.RunID, e.Event.Seq, ev); err != nil {
		if isConstraint(err) {
			return errRetry
		}
		return err
	}
	if e.Step != nil {
		b, err := json.Marshal(e.Step)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO steps (run_id, step_id, ord, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id, step_id) DO UPDATE SET data = excluded.data`, e.Step.RunID, e.Step.StepID, e.Event.Seq, b); err != nil {
			return err
		}
	}
	hooks := e.DisposedHooks
	if e.Hook != nil {
		hooks = append([]worlds.Hook{*e.Hook}, hooks...)
	}
	for i := range hooks {
		if err := putHook(ctx, tx, &hooks[i]); err != nil {
			return err
		}
	}
	for _, t := range e.ReleaseTokens {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tokens WHERE token = ?`, t); err != nil {
			return err
		}
	}
	if e.ClaimToken != "" && e.Hook != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tokens (token, hook_id) VALUES (?, ?)
			ON CONFLICT (token) DO UPDATE SET hook_id = excluded.hook_id`, e.ClaimToken, e.Hook.HookID); err != nil {
			return err
		}
	}
	if (e.Event.Type == worlds.EventRunCreated || e.Event.Type == worlds.EventAttributesSet) && len(e.Event.Attributes) > 0 {
		if err := putAttributes(ctx, tx, &e.Run, e.Event.Attributes); err != nil {
			return err
		}
	}
	if e.Wait != nil {
		b, err := json.Marshal(e.Wait)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO waits (run_id, wait_id, data) VALUES (?, ?, ?)
			ON CONFLICT (run_id, wait_id) DO UPDATE SET data = excluded.data`, e.Wait.RunID, e.Wait.WaitID, b); err != nil {
			return err
		}
	}
	return nil
}

// execer is what writes need: a write transaction, or the migration's.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// putAttributes indexes the attributes an event set on run, replacing the
// values the keys had.
func putAttributes(ctx context.Context, tx execer, run *worlds.Run, attrs map[string]string) error {
	for k, v := range attrs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_attributes (run_id, key, value, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value`, run.RunID, k, v, nanos(run.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

func putHook(ctx context.Context, tx *wtx, h *worlds.Hook) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO hooks (hook_id, run_id, status, created_at, data) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (hook_id) DO UPDATE SET status = excluded.status, data = excluded.data`,
		h.HookID, h.RunID, string(h.Status), nanos(h.CreatedAt), b)
	return err
}

// querier is what reads need: the database, or a transaction for reads inside a write.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// txLoader reads the state worlds.Plan needs inside the append's transaction.
type txLoader struct{ q querier }

func (l txLoader) Step(ctx context.Context, runID, stepID string) (*worlds.Step, error) {
	return getOne[worlds.Step](ctx, l.q, `SELECT data FROM steps WHERE run_id = ? AND step_id = ?`, runID, stepID)
}

func (l txLoader) Hook(ctx context.Context, hookID string) (*worlds.Hook, error) {
	return getOne[worlds.Hook](ctx, l.q, `SELECT data FROM hooks WHERE hook_id = ?`, hookID)
}

func (l txLoader) TokenOwner(ctx context.Context, token string) (*worlds.Hook, error) {
	return getOne[worlds.Hook](ctx, l.q, `SELECT h.data FROM tokens t JOIN hooks h ON h.hook_id = t.hook_id
		WHERE t.token = ? AND h.status = 'active'`, token)
}

func (l txLoader) Wait(ctx context.Context, runID, waitID string) (*worlds.Wait, error) {
	return getOne[worlds.Wait](ctx, l.q, `SELECT data FROM waits WHERE run_id = ? AND wait_id = ?`, runID, waitID)
}

func (l txLoader) ActiveHooks(ctx context.Context, runID string) ([]worlds.Hook, error) {
	return getAll[worlds.Hook](ctx, l.q, `SELECT data FROM hooks WHERE run_id = ? AND status = 'active' ORDER BY hook_id`, runID)
}

// getOne decodes the JSON of the single row a query returns, nil when none.
func getOne[T any](ctx context.Context, q querier, query string, args ...any) (*T, error) {
	var b []byte
	if err := q.QueryRowContext(ctx, query, args...).Scan(&b); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return nil, err
	}
	v, err := decode[T](b)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func decode[T any](b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("local: corrupt row: %w", err)
	}
	return v, nil
}

// getAll decodes the JSON in the first column of every row a query returns.
func getAll[T any](ctx context.Context, q querier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("local: corrupt row: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func getRun(ctx context.Context, q querier, runID string) (*worlds.Run, error) {
	run, err := getOne[worlds.Run](ctx, q, `SELECT data FROM runs WHERE run_id = ?`, runID)
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, fmt.Errorf("%w: %q", worlds.ErrRunNotFound, runID)
	}
	return run, nil
}
