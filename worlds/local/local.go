package local

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cairn-go/cairn/worlds"
)

// SchemaVersion is the layout of the database this package reads and writes.
// Version 2 added the run_attributes index; [Open] migrates a version 1 file
// in place, after which older builds refuse it with their ErrSchemaVersion
// (they would not keep the index up to date).
const SchemaVersion = 2

// ErrSchemaVersion is returned by [Open] for a database written with another
// schema version (usually a newer cairn); the file is left untouched.
var ErrSchemaVersion = errors.New("local: unsupported database schema version")

// ErrClosed is returned by [World.Serve] when the World is closed while serving.
var ErrClosed = errors.New("local: World closed")

// World is the embedded SQLite World. It implements [worlds.World],
// [worlds.StreamNotifier], [worlds.Server], [worlds.DeliveryCanceller] and [worlds.AppendQueuer]. Create
// it with [Open] and release it with [World.Close].
type World struct {
	cfg Config
	db  *sql.DB

	// writeMu serializes this process's writers so they queue in Go instead of
	// spinning in SQLite's busy handler; other processes are kept out by the file lock.
	writeMu sync.Mutex

	wake chan struct{} // a delivery was queued or released: re-check the earliest due time

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool

	subMu   sync.Mutex
	subs    subscribers[streamKey]
	runSubs subscribers[string] // waiters for a run's end

	servingMu sync.Mutex
	servings  []*serving // the Serve calls running, for StartEager
}

var (
	_ worlds.World             = (*World)(nil)
	_ worlds.StreamNotifier    = (*World)(nil)
	_ worlds.Server            = (*World)(nil)
	_ worlds.DeliveryCanceller = (*World)(nil)
	_ worlds.AppendQueuer      = (*World)(nil)
	_ worlds.EagerStarter      = (*World)(nil)
	_ worlds.RunNotifier       = (*World)(nil)
)

// Open opens (creating if needed) the database at cfg.Path and returns its World.
func Open(ctx context.Context, cfg Config) (*World, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(0)")
	q.Set("_txlock", "immediate")
	var dsn string
	if cfg.Path == Memory {
		dsn = ":memory:?" + q.Encode()
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		dsn = "file:" + (&url.URL{Path: cfg.Path}).EscapedPath() + "?" + q.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("local: open %s: %w", cfg.Path, err)
	}
	if cfg.Path == Memory {
		// Every connection to :memory: is a separate database: keep exactly one.
		db.SetMaxOpenConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
	}
	db.SetMaxIdleConns(4)
	w := &World{cfg: cfg, db: db, wake: make(chan struct{}, 1), stmts: map[string]*sql.Stmt{}, subs: subscribers[streamKey]{},
		runSubs: subscribers[string]{}}
	if err := w.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return w, nil
}

// Close closes the database. Stop [World.Serve] first.
func (w *World) Close() error {
	w.stmtMu.Lock()
	for _, st := range w.stmts {
		st.Close()
	}
	w.stmts, w.closed = map[string]*sql.Stmt{}, true
	w.stmtMu.Unlock()
	return w.db.Close()
}

func (w *World) isClosed() bool {
	w.stmtMu.Lock()
	defer w.stmtMu.Unlock()
	return w.closed
}

// Capabilities implements [worlds.World].
func (w *World) Capabilities() worlds.Capabilities {
	return worlds.Capabilities{
		Retention:      w.cfg.Retention > 0,
		LiveStreams:    true,
		MaxDelay:       w.cfg.MaxDelay,
		MaxStreamWrite: w.cfg.MaxStreamWrite,
		MaxItemBytes:   w.cfg.MaxItemBytes,
	}
}

var schema = []string{
	`CREATE TABLE IF NOT EXISTS runs (
		run_id TEXT PRIMARY KEY, workflow_name TEXT NOT NULL, status TEXT NOT NULL,
		created_at INTEGER NOT NULL, event_count INTEGER NOT NULL, data BLOB NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_at, run_id)`,
	`CREATE INDEX IF NOT EXISTS runs_by_workflow ON runs (workflow_name, created_at, run_id)`,
	`CREATE TABLE IF NOT EXISTS events (
		run_id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
		PRIMARY KEY (run_id, seq)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS steps (
		run_id TEXT NOT NULL, step_id TEXT NOT NULL, ord INTEGER NOT NULL, data BLOB NOT NULL,
		PRIMARY KEY (run_id, step_id)) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS steps_by_ord ON steps (run_id, ord)`,
	`CREATE TABLE IF NOT EXISTS hooks (
		hook_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, status TEXT NOT NULL,
		created_at INTEGER NOT NULL, data BLOB NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS hooks_by_created ON hooks (created_at, hook_id)`,
	`CREATE INDEX IF NOT EXISTS hooks_by_run ON hooks (run_id, created_at, hook_id)`,
	`CREATE TABLE IF NOT EXISTS tokens (token TEXT PRIMARY KEY, hook_id TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS waits (
		run_id TEXT NOT NULL, wait_id TEXT NOT NULL, data BLOB NOT NULL,
		PRIMARY KEY (run_id, wait_id)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS streams (
		run_id TEXT NOT NULL, name TEXT NOT NULL, chunks INTEGER NOT NULL, closed INTEGER NOT NULL,
		created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
		PRIMARY KEY (run_id, name)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS chunks (
		run_id TEXT NOT NULL, name TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL,
		PRIMARY KEY (run_id, name, idx)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS deliveries (
		id TEXT PRIMARY KEY, input BLOB NOT NULL, due_at INTEGER NOT NULL,
		attempt INTEGER NOT NULL DEFAULT 0, lease_until INTEGER NOT NULL DEFAULT 0,
		claim TEXT NOT NULL DEFAULT '', gen INTEGER NOT NULL DEFAULT 0)`,
	`CREATE INDEX IF NOT EXISTS deliveries_by_due ON deliveries (due_at)`,
	// One row per attribute of a run, for RunFilter.Attributes: the index serves
	// an exact match on one pair in listing order (created_at carries the run's).
	`CREATE TABLE IF NOT EXISTS run_attributes (
		run_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, created_at INTEGER NOT NULL,
		PRIMARY KEY (run_id, key)) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS run_attributes_by_value ON run_attributes (key, value, created_at, run_id)`,
}

func (w *World) migrate(ctx context.Context) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("local: open %s: %w", w.cfg.Path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("local: open %s: %w", w.cfg.Path, err)
	}
	var v string
	upgrade := false
	switch err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', ?)`, strconv.Itoa(SchemaVersion)); err != nil {
			return fmt.Errorf("local: init schema: %w", err)
		}
	case err != nil:
		return fmt.Errorf("local: read schema version: %w", err)
	case v == "1":
		upgrade = true
	case v != strconv.Itoa(SchemaVersion):
		return fmt.Errorf("%w: %s has version %s, this build reads version %d", ErrSchemaVersion, w.cfg.Path, v, SchemaVersion)
	}
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("local: init schema: %w", err)
		}
	}
	if upgrade {
		if err := indexAttributes(ctx, tx); err != nil {
			return fmt.Errorf("local: migrate %s to schema version %d: %w", w.cfg.Path, SchemaVersion, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'schema_version'`, strconv.Itoa(SchemaVersion)); err != nil {
			return fmt.Errorf("local: migrate %s to schema version %d: %w", w.cfg.Path, SchemaVersion, err)
		}
	}
	return tx.Commit()
}

// indexAttributes fills run_attributes from the run views of a version 1 file,
// in the migration's transaction: the runs written before the index existed
// are found by their attributes like every later one.
func indexAttributes(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT data FROM runs`)
	if err != nil {
		return err
	}
	var runs []worlds.Run
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			rows.Close()
			return err
		}
		r, err := decode[worlds.Run](b)
		if err != nil {
			rows.Close()
			return err
		}
		if len(r.Attributes) > 0 {
			runs = append(runs, worlds.Run{RunID: r.RunID, CreatedAt: r.CreatedAt, Attributes: r.Attributes})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range runs {
		if err := putAttributes(ctx, tx, &runs[i], runs[i].Attributes); err != nil {
			return err
		}
	}
	return nil
}

// write runs fn in an immediate transaction, retrying with jitter when fn reports
// errRetry (up to 16 attempts) or the file stayed locked by another process for
// a whole BusyTimeout (up to 3 times), then returns ErrAppendContention.
func (w *World) write(ctx context.Context, fn func(tx *wtx) error) error {
	const maxAttempts, maxBusy = 16, 3
	var last error
	busy := 0
	for attempt := 0; attempt < maxAttempts && busy < maxBusy; attempt++ {
		if attempt > 0 {
			d := time.Duration(1<<min(attempt, 8)) * time.Millisecond
			d = d/2 + time.Duration(jitter(int64(d)))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		err := w.tryWrite(ctx, fn)
		if err == nil {
			return nil
		}
		if isBusy(err) {
			busy++
		} else if !errors.Is(err, errRetry) {
			return err
		}
		last = err
	}
	return fmt.Errorf("%w: %v", worlds.ErrAppendContention, last)
}

func (w *World) tryWrite(ctx context.Context, fn func(tx *wtx) error) error {
	t := &wtx{w: w}
	err := func() error {
		w.writeMu.Lock()
		defer w.writeMu.Unlock()
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		t.tx = tx
		if err := fn(t); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}()
	// Statements first seen in this transaction are prepared now that it holds no
	// connection: a :memory: World has only one.
	for _, q := range t.unprepared {
		if st, perr := w.db.PrepareContext(ctx, q); perr == nil {
			w.stmtMu.Lock()
			if _, dup := w.stmts[q]; dup || w.closed {
				st.Close()
			} else {
				w.stmts[q] = st
			}
			w.stmtMu.Unlock()
		}
	}
	return err
}

// wtx is a write transaction whose statements are prepared once per connection
// and reused, which saves SQLite parsing them on every append.
type wtx struct {
	tx         *sql.Tx
	w          *World
	unprepared []string
}

// stmt returns the transaction's form of a prepared statement, or nil the first
// time a query is seen (the caller runs it unprepared).
func (t *wtx) stmt(ctx context.Context, query string) *sql.Stmt {
	t.w.stmtMu.Lock()
	st, ok := t.w.stmts[query]
	t.w.stmtMu.Unlock()
	if !ok {
		t.unprepared = append(t.unprepared, query)
		return nil
	}
	return t.tx.StmtContext(ctx, st)
}

func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// errRetry reports a lost optimistic-concurrency race inside a write.
var errRetry = errors.New("local: event count changed")

func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

func (w *World) now() time.Time { return w.cfg.Clock().UTC().Round(0) }

func nanos(t time.Time) int64 { return t.UTC().UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
