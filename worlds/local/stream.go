package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-go/cairn/worlds"
)

type streamKey struct{ run, name string }

// WriteStream implements [worlds.World].
func (w *World) WriteStream(ctx context.Context, runID, name string, chunks ...[]byte) (int, error) {
	if name == "" {
		return 0, &worlds.ArgumentError{Field: "name", Value: `""`, Reason: "stream name required"}
	}
	if w.cfg.MaxStreamWrite > 0 && len(chunks) > w.cfg.MaxStreamWrite {
		return 0, fmt.Errorf("%w: %d chunks, at most %d per write", worlds.ErrTooManyChunks, len(chunks), w.cfg.MaxStreamWrite)
	}
	for i, c := range chunks {
		if w.cfg.MaxItemBytes > 0 && len(c) > w.cfg.MaxItemBytes {
			return 0, fmt.Errorf("%w: chunk %d is %d bytes, limit %d", worlds.ErrItemTooLarge, i, len(c), w.cfg.MaxItemBytes)
		}
	}
	var first int
	err := w.write(ctx, func(tx *wtx) error {
		st, err := w.openStream(ctx, tx, runID, name)
		if err != nil {
			return err
		}
		if st.Closed {
			return fmt.Errorf("%w: run %q stream %q", worlds.ErrStreamClosed, runID, name)
		}
		first = st.Chunks
		for i, c := range chunks {
			if c == nil {
				c = []byte{}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO chunks (run_id, name, idx, data) VALUES (?, ?, ?, ?)`, runID, name, first+i, c); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE streams SET chunks = ?, updated_at = ? WHERE run_id = ? AND name = ?`,
			first+len(chunks), nanos(w.now()), runID, name)
		return err
	})
	if err != nil {
		return 0, err
	}
	w.notify(runID, name)
	return first, nil
}

// openStream returns a stream's state, creating it for a run that is still going.
func (w *World) openStream(ctx context.Context, tx *wtx, runID, name string) (worlds.StreamInfo, error) {
	run, err := getRun(ctx, tx, runID)
	if err != nil {
		return worlds.StreamInfo{}, err
	}
	st, err := getStream(ctx, tx, runID, name)
	if err == nil {
		if !st.Closed && run.Status.Terminal() {
			return st, fmt.Errorf("%w: run %q is %s", worlds.ErrRunFinished, runID, run.Status)
		}
		return st, nil
	}
	if !errors.Is(err, worlds.ErrStreamNotFound) {
		return st, err
	}
	if run.Status.Terminal() {
		return st, fmt.Errorf("%w: run %q is %s", worlds.ErrRunFinished, runID, run.Status)
	}
	now := nanos(w.now())
	_, err = tx.ExecContext(ctx, `INSERT INTO streams (run_id, name, chunks, closed, created_at, updated_at) VALUES (?, ?, 0, 0, ?, ?)`, runID, name, now, now)
	return worlds.StreamInfo{RunID: runID, Name: name}, err
}

func getStream(ctx context.Context, q querier, runID, name string) (worlds.StreamInfo, error) {
	st := worlds.StreamInfo{RunID: runID, Name: name}
	var created, updated int64
	err := q.QueryRowContext(ctx, `SELECT chunks, closed, created_at, updated_at FROM streams WHERE run_id = ? AND name = ?`, runID, name).
		Scan(&st.Chunks, &st.Closed, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("%w: run %q stream %q", worlds.ErrStreamNotFound, runID, name)
	}
	st.CreatedAt, st.UpdatedAt = fromNanos(created), fromNanos(updated)
	return st, err
}

// CloseStream implements [worlds.World]. Closing the streams of a finished run is
// allowed, so a run's last step can end its streams after the run completes.
func (w *World) CloseStream(ctx context.Context, runID, name string) error {
	if name == "" {
		return &worlds.ArgumentError{Field: "name", Value: `""`, Reason: "stream name required"}
	}
	err := w.write(ctx, func(tx *wtx) error {
		if _, err := getRun(ctx, tx, runID); err != nil {
			return err
		}
		now := nanos(w.now())
		_, err := tx.ExecContext(ctx, `INSERT INTO streams (run_id, name, chunks, closed, created_at, updated_at) VALUES (?, ?, 0, 1, ?, ?)
			ON CONFLICT (run_id, name) DO UPDATE SET closed = 1, updated_at = excluded.updated_at WHERE closed = 0`, runID, name, now, now)
		return err
	})
	if err != nil {
		return err
	}
	w.notify(runID, name)
	return nil
}

// ReadStream implements [worlds.World].
func (w *World) ReadStream(ctx context.Context, runID, name string, from, limit int) (worlds.StreamPage, error) {
	if from < 0 {
		return worlds.StreamPage{}, &worlds.ArgumentError{Field: "from", Value: from, Reason: "must not be negative"}
	}
	limit, err := worlds.PageLimit(limit)
	if err != nil {
		return worlds.StreamPage{}, err
	}
	// One read transaction, so the closed flag and the chunks are one snapshot.
	tx, err := w.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return worlds.StreamPage{}, err
	}
	defer tx.Rollback()
	st, err := getStream(ctx, tx, runID, name)
	if err != nil {
		if _, rerr := getRun(ctx, tx, runID); rerr != nil {
			return worlds.StreamPage{}, rerr
		}
		return worlds.StreamPage{}, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT idx, data FROM chunks WHERE run_id = ? AND name = ? AND idx >= ? ORDER BY idx LIMIT ?`, runID, name, from, limit)
	if err != nil {
		return worlds.StreamPage{}, err
	}
	defer rows.Close()
	p := worlds.StreamPage{Chunks: []worlds.Chunk{}, Next: from}
	for rows.Next() {
		var c worlds.Chunk
		if err := rows.Scan(&c.Index, &c.Data); err != nil {
			return worlds.StreamPage{}, err
		}
		p.Chunks = append(p.Chunks, c)
		p.Next = c.Index + 1
	}
	if err := rows.Err(); err != nil {
		return worlds.StreamPage{}, err
	}
	if p.Next < from {
		p.Next = from
	}
	p.Closed = st.Closed && p.Next >= st.Chunks
	return p, nil
}

// ListStreams implements [worlds.World].
func (w *World) ListStreams(ctx context.Context, runID string) ([]worlds.StreamInfo, error) {
	if _, err := getRun(ctx, w.db, runID); err != nil {
		return nil, err
	}
	rows, err := w.db.QueryContext(ctx, `SELECT name, chunks, closed, created_at, updated_at FROM streams WHERE run_id = ? ORDER BY name`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []worlds.StreamInfo{}
	for rows.Next() {
		st := worlds.StreamInfo{RunID: runID}
		var created, updated int64
		if err := rows.Scan(&st.Name, &st.Chunks, &st.Closed, &created, &updated); err != nil {
			return nil, err
		}
		st.CreatedAt, st.UpdatedAt = fromNanos(created), fromNanos(updated)
		out = append(out, st)
	}
	return out, rows.Err()
}

// SubscribeStream implements [worlds.StreamNotifier] for writes made through this
// World; writes by other processes sharing the file are seen by polling ReadStream.
func (w *World) SubscribeStream(runID, name string) (<-chan struct{}, func()) {
	return subscribe(&w.subMu, w.subs, streamKey{runID, name})
}

// SubscribeRun implements [worlds.RunNotifier] for appends made through this
// World; ends written by other processes sharing the file are seen by polling
// GetRun.
func (w *World) SubscribeRun(runID string) (<-chan struct{}, func()) {
	return subscribe(&w.subMu, w.runSubs, runID)
}

func (w *World) notify(runID, name string) { notifyAll(&w.subMu, w.subs, streamKey{runID, name}) }

func (w *World) notifyRun(runID string) { notifyAll(&w.subMu, w.runSubs, runID) }

// subscribers holds, for each key, the channels of those waiting on it.
type subscribers[K comparable] map[K]map[chan struct{}]struct{}

// subscribe adds a channel for k to subs, which mu guards, and returns it
// with the function that removes it.
func subscribe[K comparable](mu *sync.Mutex, subs subscribers[K], k K) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	mu.Lock()
	if subs[k] == nil {
		subs[k] = map[chan struct{}]struct{}{}
	}
	subs[k][ch] = struct{}{}
	mu.Unlock()
	return ch, func() {
		mu.Lock()
		delete(subs[k], ch)
		if len(subs[k]) == 0 {
			delete(subs, k)
		}
		mu.Unlock()
	}
}

// notifyAll wakes every channel subscribed to k.
func notifyAll[K comparable](mu *sync.Mutex, subs subscribers[K], k K) {
	mu.Lock()
	defer mu.Unlock()
	for ch := range subs[k] {
		select {
		case ch <- struct{}{}:
		default: // a notification is already pending; they coalesce
		}
	}
}
