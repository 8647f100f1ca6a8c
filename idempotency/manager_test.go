package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

var (
	t0      = time.UnixMilli(1767225600123)
	noEnv   = func(string) (string, bool) { return "", false }
	discard = slog.New(slog.NewTextHandler(io.Discard, nil))
)

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

type receipt struct {
	OrderID string `json:"order_id"`
	Run     int64  `json:"run"`
}

// scripted wraps a MemoryStore and lets a test replace any call.
type scripted struct {
	*idempotencytest.MemoryStore
	put      func(idempotency.Record) error
	get      func(string) (idempotency.Record, error)
	complete func(idempotency.Record) error
	del      func(string) error
	puts     atomic.Int64
}

func newScripted() *scripted { return &scripted{MemoryStore: idempotencytest.NewMemoryStore()} }

func (s *scripted) PutInProgress(ctx context.Context, rec idempotency.Record, now time.Time) error {
	s.puts.Add(1)
	if s.put != nil {
		return s.put(rec)
	}
	return s.MemoryStore.PutInProgress(ctx, rec, now)
}

func (s *scripted) Get(ctx context.Context, key string) (idempotency.Record, error) {
	if s.get != nil {
		return s.get(key)
	}
	return s.MemoryStore.Get(ctx, key)
}

func (s *scripted) Complete(ctx context.Context, rec idempotency.Record, now time.Time) error {
	if s.complete != nil {
		return s.complete(rec)
	}
	return s.MemoryStore.Complete(ctx, rec, now)
}

func (s *scripted) Delete(ctx context.Context, key string) error {
	if s.del != nil {
		return s.del(key)
	}
	return s.MemoryStore.Delete(ctx, key)
}

func newManager(t testing.TB, store idempotency.Store, mutate func(*idempotency.Options)) *idempotency.Manager {
	t.Helper()
	opts := idempotency.Options{
		KeyPrefix: "process-order", EventKeyJMESPath: "id", PayloadValidationJMESPath: "amount",
		Clock: func() time.Time { return t0 }, LookupEnv: noEnv, Logger: discard,
	}
	if mutate != nil {
		mutate(&opts)
	}
	m, err := idempotency.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type counter struct{ n atomic.Int64 }

func (c *counter) fn(id string) func(context.Context) (receipt, error) {
	return func(context.Context) (receipt, error) { return receipt{OrderID: id, Run: c.n.Add(1)}, nil }
}

func leaseCtx() (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
}

func TestFirstCallThenReplay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		cache               bool
		returnExisting      bool
		firstReqs, replayRq int64
	}{
		{"all_old", false, true, 2, 1},
		{"read_after_conflict", false, false, 2, 2},
		{"local_cache", true, true, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &idempotencytest.MemoryStore{ReturnExisting: tc.returnExisting}
			m := newManager(t, store, func(o *idempotency.Options) { o.LocalCache = tc.cache })
			var c counter
			ctx := context.Background()
			first, err := idempotency.Execute(ctx, m, order{"ORD-1", 42}, c.fn("ORD-1"))
			if err != nil {
				t.Fatal(err)
			}
			if got := store.Requests(); got != tc.firstReqs {
				t.Fatalf("first call used %d requests, want %d", got, tc.firstReqs)
			}
			replayed, err := idempotency.Execute(ctx, m, order{"ORD-1", 42}, c.fn("ORD-1"))
			if err != nil {
				t.Fatal(err)
			}
			if replayed != first || c.n.Load() != 1 {
				t.Fatalf("replay %+v of %+v, %d runs", replayed, first, c.n.Load())
			}
			if got := store.Requests() - tc.firstReqs; got != tc.replayRq {
				t.Fatalf("replay used %d requests, want %d", got, tc.replayRq)
			}
		})
	}
}

func TestRecordContents(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	ttl := 90 * time.Second
	m := newManager(t, store, func(o *idempotency.Options) { o.ExpiresAfter = &ttl })
	deadline := t0.Add(30 * time.Second)
	ctx := leaseContext{context.Background(), deadline}
	var seen idempotency.Record
	_, err := idempotency.Execute(ctx, m, order{"ORD-1", 42}, func(ctx context.Context) (receipt, error) {
		key, _, _, _ := m.Key(order{"ORD-1", 42})
		rec, err := store.Get(ctx, key)
		seen = rec
		return receipt{OrderID: "ORD-1"}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	wantKey, err := idempotency.Key("process-order", "ORD-1", idempotency.MD5)
	if err != nil {
		t.Fatal(err)
	}
	// Math.round(1767225600.123 + 90)
	if seen.Key != wantKey || seen.Status != idempotency.StatusInProgress || seen.ExpiresAt != 1767225690 ||
		seen.InProgressExpiresAt != deadline.UnixMilli() || seen.ValidationHash == "" {
		t.Fatalf("in-progress record %+v (key want %s)", seen, wantKey)
	}
	done, err := store.Get(context.Background(), wantKey)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != idempotency.StatusCompleted || string(done.Data) != `{"order_id":"ORD-1","run":0}` || done.ExpiresAt != 1767225690 {
		t.Fatalf("completed record %+v", done)
	}
}

type leaseContext struct {
	context.Context
	deadline time.Time
}

func (c leaseContext) Deadline() (time.Time, bool) { return c.deadline, true }

func TestValidationMismatch(t *testing.T) {
	t.Parallel()
	m := newManager(t, idempotencytest.NewMemoryStore(), nil)
	var c counter
	if _, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a")); err != nil {
		t.Fatal(err)
	}
	_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 43}, c.fn("a"))
	var ve *idempotency.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, idempotency.ErrValidation) || ve.Existing == nil || c.n.Load() != 1 {
		t.Fatalf("err = %v, runs %d", err, c.n.Load())
	}
}

func TestInProgressRejected(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m := newManager(t, store, nil)
	key, vhash, _, _ := m.Key(order{"ORD-1", 42})
	store.Set(idempotency.Record{Key: key, Status: idempotency.StatusInProgress, ExpiresAt: t0.Unix() + 3600, InProgressExpiresAt: t0.UnixMilli() + 5000, ValidationHash: vhash})
	var c counter
	_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a"))
	var ip *idempotency.AlreadyInProgressError
	if !errors.As(err, &ip) || !ip.Temporary() || c.n.Load() != 0 {
		t.Fatalf("err = %v, runs %d", err, c.n.Load())
	}
}

func TestInconsistentStateRetriedThenReturned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing idempotency.Record
		getErr   error
	}{
		{"lease_expired", idempotency.Record{Status: idempotency.StatusInProgress, ExpiresAt: t0.Unix() + 3600, InProgressExpiresAt: t0.UnixMilli() - 1}, nil},
		{"record_expired", idempotency.Record{Status: idempotency.StatusCompleted, ExpiresAt: t0.Unix() - 1}, nil},
		{"vanished", idempotency.Record{}, idempotency.ErrItemNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newScripted()
			m := newManager(t, store, func(o *idempotency.Options) { o.PayloadValidationJMESPath = "" })
			store.put = func(rec idempotency.Record) error {
				if tc.getErr != nil {
					return &idempotency.ItemAlreadyExistsError{Key: rec.Key}
				}
				e := tc.existing
				e.Key = rec.Key
				return &idempotency.ItemAlreadyExistsError{Key: rec.Key, Existing: &e}
			}
			store.get = func(string) (idempotency.Record, error) { return idempotency.Record{}, tc.getErr }
			var c counter
			_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a"))
			if !errors.Is(err, idempotency.ErrInconsistentState) || c.n.Load() != 0 {
				t.Fatalf("err = %v", err)
			}
			if got := store.puts.Load(); got != idempotency.MaxRetries+1 {
				t.Fatalf("%d attempts, want %d", got, idempotency.MaxRetries+1)
			}
		})
	}
}

func TestInconsistentStateRecovers(t *testing.T) {
	t.Parallel()
	store := newScripted()
	m := newManager(t, store, nil)
	store.put = func(rec idempotency.Record) error {
		if store.puts.Load() == 1 {
			return &idempotency.ItemAlreadyExistsError{Key: rec.Key} // then Get finds nothing
		}
		return store.MemoryStore.PutInProgress(context.Background(), rec, t0)
	}
	var c counter
	if _, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a")); err != nil || c.n.Load() != 1 {
		t.Fatalf("err = %v, runs %d", err, c.n.Load())
	}
}

func TestBusinessErrorDeletesRecord(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m := newManager(t, store, nil)
	boom := errors.New("boom")
	_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, func(context.Context) (receipt, error) { return receipt{}, boom })
	if !errors.Is(err, boom) || errors.Is(err, idempotency.ErrPersistence) {
		t.Fatalf("err = %v", err)
	}
	key, _, _, _ := m.Key(order{"ORD-1", 42})
	if _, err := store.Get(context.Background(), key); !errors.Is(err, idempotency.ErrItemNotFound) {
		t.Fatalf("record left behind: %v", err)
	}
}

func TestCleanupFailureJoinsErrors(t *testing.T) {
	t.Parallel()
	store := newScripted()
	dbErr := errors.New("throttled")
	store.del = func(string) error { return dbErr }
	m := newManager(t, store, nil)
	boom := errors.New("boom")
	_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, func(context.Context) (receipt, error) { return receipt{}, boom })
	var pe *idempotency.PersistenceError
	if !errors.Is(err, boom) || !errors.Is(err, dbErr) || !errors.As(err, &pe) || pe.Op != "delete" {
		t.Fatalf("err = %v", err)
	}
}

func TestPanicCleansUpAndRethrows(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m := newManager(t, store, nil)
	type marker struct{ v int }
	func() {
		defer func() {
			if p := recover(); p != (marker{7}) {
				t.Fatalf("recovered %v", p)
			}
		}()
		_, _ = idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, func(context.Context) (receipt, error) { panic(marker{7}) })
		t.Fatal("no panic")
	}()
	if store.Deletes.Load() != 1 {
		t.Fatalf("deletes = %d", store.Deletes.Load())
	}
	var c counter
	if _, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a")); err != nil || c.n.Load() != 1 {
		t.Fatalf("after panic: %v", err)
	}
}

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	dbErr := errors.New("unavailable")
	for _, tc := range []struct {
		name  string
		setup func(*scripted)
		op    string
	}{
		{"put", func(s *scripted) { s.put = func(idempotency.Record) error { return dbErr } }, "save in progress"},
		{"get", func(s *scripted) {
			s.put = func(r idempotency.Record) error { return &idempotency.ItemAlreadyExistsError{Key: r.Key} }
			s.get = func(string) (idempotency.Record, error) { return idempotency.Record{}, dbErr }
		}, "get"},
		{"complete", func(s *scripted) { s.complete = func(idempotency.Record) error { return dbErr } }, "update success"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newScripted()
			tc.setup(store)
			m := newManager(t, store, nil)
			var c counter
			_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a"))
			var pe *idempotency.PersistenceError
			if !errors.As(err, &pe) || pe.Op != tc.op || !errors.Is(err, dbErr) || !errors.Is(err, idempotency.ErrPersistence) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// TestDisabledByEnvironment: POWERTOOLS_IDEMPOTENCY_DISABLED is parsed as Powertools
// parses it (trimmed, case-insensitive, extended booleans), and no value makes New
// fail: an empty or unrecognised value leaves idempotency enabled, the latter with one
// warning.
func TestDisabledByEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value    string
		set      bool
		disabled bool
		warns    int
	}{
		{"", false, false, 0},
		{"true", true, true, 0},
		{"TRUE", true, true, 0},
		{" 1 ", true, true, 0},
		{"1", true, true, 0},
		{"YES", true, true, 0},
		{"y", true, true, 0},
		{"t", true, true, 0},
		{"on", true, true, 0},
		{"\ttrue\n", true, true, 0},
		{"false", true, false, 0},
		{"0", true, false, 0},
		{"off", true, false, 0},
		{"No", true, false, 0},
		{"n", true, false, 0},
		{"f", true, false, 0},
		{"", true, false, 0},
		{"   ", true, false, 0},
		{"maybe", true, false, 1},
		{"2", true, false, 1},
		{"disabled", true, false, 1},
	} {
		t.Run(fmt.Sprintf("%q/set=%v", tc.value, tc.set), func(t *testing.T) {
			t.Parallel()
			store := idempotencytest.NewMemoryStore()
			logs := &recorder{}
			m, err := idempotency.New(store, idempotency.Options{
				KeyPrefix: "p", EventKeyJMESPath: "id", Logger: slog.New(logs),
				LookupEnv: func(k string) (string, bool) { return tc.value, tc.set && k == idempotency.DisabledEnv },
			})
			if err != nil {
				t.Fatalf("New failed: %v", err)
			}
			var c counter
			for range 2 {
				if _, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a")); err != nil {
					t.Fatal(err)
				}
			}
			wantRuns, wantReqs := int64(1), int64(3)
			if tc.disabled {
				wantRuns, wantReqs = 2, 0
			}
			if c.n.Load() != wantRuns || store.Requests() != wantReqs {
				t.Fatalf("runs %d, requests %d; want %d, %d", c.n.Load(), store.Requests(), wantRuns, wantReqs)
			}
			if got := logs.count(slog.LevelWarn, idempotency.DisabledEnv); got != tc.warns {
				t.Fatalf("%d warnings about %s, want %d: %v", got, idempotency.DisabledEnv, tc.warns, logs.messages())
			}
		})
	}
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// count returns how many records at level mention substr in their message or attributes.
func (r *recorder) count(level slog.Level, substr string) int {
	n := 0
	for _, line := range r.lines(level) {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

func (r *recorder) lines(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if rec.Level != level {
			continue
		}
		line := rec.Message
		rec.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		out = append(out, line)
	}
	return out
}

func (r *recorder) messages() []string {
	return append(r.lines(slog.LevelWarn), r.lines(slog.LevelDebug)...)
}

// TestNoDeadlineWarnsOncePerManager: calls without a context deadline log one warning
// per manager, not one per call.
func TestNoDeadlineWarnsOncePerManager(t *testing.T) {
	t.Parallel()
	logs := &recorder{}
	store := idempotencytest.NewMemoryStore()
	for range 2 {
		m := newManager(t, store, func(o *idempotency.Options) { o.Logger = slog.New(logs); o.Clock = nil })
		var c counter
		for i := range 5 {
			if _, err := idempotency.Execute(context.Background(), m, order{fmt.Sprint("ORD-", i), 42}, c.fn("a")); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := leaseCtx()
		if _, err := idempotency.Execute(ctx, m, order{"ORD-lease", 42}, c.fn("a")); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	if got := logs.count(slog.LevelWarn, "no deadline"); got != 2 {
		t.Fatalf("%d deadline warnings for 2 managers × 5 calls, want 2: %v", got, logs.messages())
	}
}

// TestEmptyKeyPrefixRejected: without KeyPrefix and AWS_LAMBDA_FUNCTION_NAME every
// manager would share "#<digest>" keys, so New names the field instead.
func TestEmptyKeyPrefixRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prefix, fn string
		fnSet            bool
		want             string
	}{
		{"nothing", "", "", false, ""},
		{"blank prefix", "  ", "", false, ""},
		{"blank function name", "", " ", true, ""},
		{"function name", "", "my-fn", true, "my-fn"},
		{"prefix wins", "orders", "my-fn", true, "orders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{
				KeyPrefix: tc.prefix,
				LookupEnv: func(k string) (string, bool) { return tc.fn, tc.fnSet && k == "AWS_LAMBDA_FUNCTION_NAME" },
			})
			if tc.want == "" {
				var oe *idempotency.OptionError
				if !errors.As(err, &oe) || oe.Field != "KeyPrefix" || !errors.Is(err, idempotency.ErrInvalidOption) {
					t.Fatalf("err = %v, want an OptionError for KeyPrefix", err)
				}
				return
			}
			if err != nil || m.KeyPrefix() != tc.want {
				t.Fatalf("prefix %q, %v; want %q", m.KeyPrefix(), err, tc.want)
			}
		})
	}
}

// TestJSONStringBody: an API Gateway-style event whose body is JSON text in a string
// makes "body.id" find nothing. As in the reference the request then bypasses
// idempotency (or fails with ThrowOnNoKey), and both the warning and the error say
// how to decode the body.
func TestJSONStringBody(t *testing.T) {
	t.Parallel()
	type apiEvent struct {
		Body string `json:"body"`
	}
	event := apiEvent{Body: `{"id":"ORD-1","amount":42}`}
	for _, tc := range []struct {
		name  string
		throw bool
	}{{"default bypasses and warns", false}, {"ThrowOnNoKey rejects", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &recorder{}
			store := idempotencytest.NewMemoryStore()
			m := newManager(t, store, func(o *idempotency.Options) {
				o.EventKeyJMESPath, o.PayloadValidationJMESPath, o.ThrowOnNoKey, o.Logger = "body.id", "", tc.throw, slog.New(logs)
			})
			var c counter
			for range 3 {
				_, err := idempotency.Execute(context.Background(), m, event, c.fn("a"))
				if tc.throw {
					if !errors.Is(err, idempotency.ErrKey) || !strings.Contains(err.Error(), "powertools_json(body).id") {
						t.Fatalf("err = %v, want a KeyError suggesting powertools_json(body).id", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if store.Requests() != 0 {
				t.Fatalf("%d store requests, want none", store.Requests())
			}
			if tc.throw {
				if c.n.Load() != 0 || len(logs.messages()) != 0 {
					t.Fatalf("runs %d, logs %v", c.n.Load(), logs.messages())
				}
				return
			}
			if c.n.Load() != 3 {
				t.Fatalf("runs %d, want 3 (bypassed)", c.n.Load())
			}
			if warn, debug := logs.count(slog.LevelWarn, "powertools_json(body).id"), logs.count(slog.LevelDebug, "powertools_json(body).id"); warn != 1 || debug != 2 {
				t.Fatalf("%d warnings and %d debug lines with the hint, want 1 and 2: %v", warn, debug, logs.messages())
			}
			// The suggested expression works.
			m = newManager(t, store, func(o *idempotency.Options) {
				o.EventKeyJMESPath, o.PayloadValidationJMESPath = "powertools_json(body).id", ""
			})
			for range 2 {
				if _, err := idempotency.Execute(context.Background(), m, event, c.fn("a")); err != nil {
					t.Fatal(err)
				}
			}
			if c.n.Load() != 4 {
				t.Fatalf("runs %d, want 4 (one more, then a replay)", c.n.Load())
			}
		})
	}
	// The whole event as a Go string: the hint says to pass it as json.RawMessage.
	m := newManager(t, idempotencytest.NewMemoryStore(), func(o *idempotency.Options) {
		o.EventKeyJMESPath, o.PayloadValidationJMESPath, o.ThrowOnNoKey = "body.id", "", true
	})
	var c counter
	_, err := idempotency.Execute(context.Background(), m, `{"body":{"id":"ORD-1"}}`, c.fn("a"))
	if !errors.Is(err, idempotency.ErrKey) || !strings.Contains(err.Error(), "json.RawMessage") || !strings.Contains(err.Error(), "powertools_json(@).body.id") {
		t.Fatalf("string payload: err = %v", err)
	}
	if _, err := idempotency.Execute(context.Background(), m, json.RawMessage(`{"body":{"id":"ORD-1"}}`), c.fn("a")); err != nil {
		t.Fatalf("same event as json.RawMessage: %v", err)
	}
}

func TestMissingKey(t *testing.T) {
	t.Parallel()
	type ev struct {
		ID any `json:"id"`
	}
	for _, tc := range []struct {
		name     string
		id       any
		throw    bool
		wantErr  bool
		wantReqs bool
	}{
		{"null_bypasses", nil, false, false, false},
		{"null_throws", nil, true, true, false},
		{"empty_string_participates", "", false, false, true},
		{"empty_string_throws", "", true, true, false},
		{"zero_throws", 0, true, true, false},
		{"empty_object_throws", map[string]any{}, true, true, false},
		{"object_with_falsy_values_throws", map[string]any{"a": 0, "b": ""}, true, true, false},
		{"value_ok", "x", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := idempotencytest.NewMemoryStore()
			m := newManager(t, store, func(o *idempotency.Options) { o.ThrowOnNoKey = tc.throw; o.PayloadValidationJMESPath = "" })
			var c counter
			_, err := idempotency.Execute(context.Background(), m, ev{tc.id}, c.fn("a"))
			var ke *idempotency.KeyError
			if tc.wantErr != errors.As(err, &ke) || (tc.wantErr && !errors.Is(err, idempotency.ErrKey)) || (!tc.wantErr && err != nil) {
				t.Fatalf("err = %v", err)
			}
			if (store.Requests() > 0) != tc.wantReqs {
				t.Fatalf("requests = %d", store.Requests())
			}
		})
	}
}

func TestResponseHookOnlyOnReplay(t *testing.T) {
	t.Parallel()
	var hooked atomic.Int64
	m := newManager(t, idempotencytest.NewMemoryStore(), func(o *idempotency.Options) {
		o.ResponseHook = func(_ context.Context, resp json.RawMessage, rec idempotency.Record) (json.RawMessage, error) {
			hooked.Add(1)
			if rec.Status != idempotency.StatusCompleted {
				t.Errorf("hook saw %s", rec.Status)
			}
			return json.RawMessage(strings.Replace(string(resp), `"ORD-1"`, `"replayed"`, 1)), nil
		}
	})
	var c counter
	first, _ := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("ORD-1"))
	second, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("ORD-1"))
	if err != nil || first.OrderID != "ORD-1" || second.OrderID != "replayed" || hooked.Load() != 1 {
		t.Fatalf("first %+v second %+v err %v hooks %d", first, second, err, hooked.Load())
	}
}

func TestClearCache(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m := newManager(t, store, func(o *idempotency.Options) { o.LocalCache = true; o.MaxLocalCacheSize = 1 })
	var c counter
	ctx := context.Background()
	_, _ = idempotency.Execute(ctx, m, order{"A", 1}, c.fn("A"))
	_, _ = idempotency.Execute(ctx, m, order{"A", 1}, c.fn("A"))
	if store.Requests() != 2 {
		t.Fatalf("cached replay hit the store: %d", store.Requests())
	}
	m.ClearCache()
	_, _ = idempotency.Execute(ctx, m, order{"A", 1}, c.fn("A"))
	if store.Requests() != 3 || c.n.Load() != 1 {
		t.Fatalf("after ClearCache: %d requests, %d runs", store.Requests(), c.n.Load())
	}
	// Capacity 1: caching B evicts A.
	_, _ = idempotency.Execute(ctx, m, order{"B", 1}, c.fn("B"))
	before := store.Requests()
	_, _ = idempotency.Execute(ctx, m, order{"A", 1}, c.fn("A"))
	if store.Requests() != before+1 {
		t.Fatalf("evicted entry served from cache")
	}
}

func TestKeySnapshotBeforeExecution(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m := newManager(t, store, func(o *idempotency.Options) { o.PayloadValidationJMESPath = "" })
	payload := map[string]any{"id": "ORD-1"}
	key, _, _, _ := m.Key(payload)
	_, err := idempotency.Execute(context.Background(), m, payload, func(context.Context) (receipt, error) {
		payload["id"] = "ORD-2"
		return receipt{OrderID: "x"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := store.Get(context.Background(), key)
	if err != nil || rec.Status != idempotency.StatusCompleted {
		t.Fatalf("original key not completed: %+v %v", rec, err)
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	zero, neg := time.Duration(0), -time.Second
	for _, tc := range []struct {
		name  string
		store idempotency.Store
		opts  idempotency.Options
		field string
	}{
		{"nil store", nil, idempotency.Options{}, "store"},
		{"unknown hash", idempotencytest.NewMemoryStore(), idempotency.Options{HashAlgorithm: "crc32"}, "HashAlgorithm"},
		{"zero ttl", idempotencytest.NewMemoryStore(), idempotency.Options{ExpiresAfter: &zero}, "ExpiresAfter"},
		{"negative ttl", idempotencytest.NewMemoryStore(), idempotency.Options{ExpiresAfter: &neg}, "ExpiresAfter"},
		{"bad key jmespath", idempotencytest.NewMemoryStore(), idempotency.Options{EventKeyJMESPath: "a.["}, "EventKeyJMESPath"},
		{"unknown function", idempotencytest.NewMemoryStore(), idempotency.Options{EventKeyJMESPath: "nope(a)"}, "EventKeyJMESPath"},
		{"bad validation jmespath", idempotencytest.NewMemoryStore(), idempotency.Options{PayloadValidationJMESPath: "a ="}, "PayloadValidationJMESPath"},
		{"negative cache", idempotencytest.NewMemoryStore(), idempotency.Options{MaxLocalCacheSize: -1}, "MaxLocalCacheSize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.LookupEnv = noEnv
			_, err := idempotency.New(tc.store, tc.opts)
			var oe *idempotency.OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field || !errors.Is(err, idempotency.ErrInvalidOption) {
				t.Fatalf("err = %v, want OptionError for %s", err, tc.field)
			}
		})
	}
}

func TestUnsupportedValues(t *testing.T) {
	t.Parallel()
	m := newManager(t, idempotencytest.NewMemoryStore(), func(o *idempotency.Options) {
		o.EventKeyJMESPath, o.PayloadValidationJMESPath = "", ""
	})
	for _, v := range []any{make(chan int), math.NaN(), map[string]any{"f": func() {}}, json.RawMessage(`{"a":`)} {
		var c counter
		_, err := idempotency.Execute(context.Background(), m, v, c.fn("a"))
		var ue *idempotency.UnsupportedValueError
		if !errors.As(err, &ue) || !errors.Is(err, idempotency.ErrUnsupportedValue) || c.n.Load() != 0 {
			t.Fatalf("%T: err = %v", v, err)
		}
		if _, err := idempotency.CanonicalJSON(v); !errors.Is(err, idempotency.ErrUnsupportedValue) {
			t.Fatalf("CanonicalJSON(%T): %v", v, err)
		}
	}
	// A response JSON cannot hold fails the call and frees the key.
	store := idempotencytest.NewMemoryStore()
	m = newManager(t, store, nil)
	_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 1}, func(context.Context) (float64, error) { return math.Inf(1), nil })
	if !errors.Is(err, idempotency.ErrUnsupportedValue) || store.Deletes.Load() != 1 {
		t.Fatalf("unrepresentable response: %v", err)
	}
}

func TestDefaultPrefixFromFunctionName(t *testing.T) {
	t.Parallel()
	m, err := idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{
		LookupEnv: func(k string) (string, bool) { return "  my-fn ", k == "AWS_LAMBDA_FUNCTION_NAME" },
	})
	if err != nil || m.KeyPrefix() != "my-fn" {
		t.Fatalf("prefix %q, %v", m.KeyPrefix(), err)
	}
}

func TestWrapHandler(t *testing.T) {
	t.Parallel()
	m := newManager(t, idempotencytest.NewMemoryStore(), nil)
	var runs atomic.Int64
	h := idempotency.WrapHandler(m, func(ctx context.Context, o order) (receipt, error) {
		return receipt{OrderID: o.ID, Run: runs.Add(1)}, nil
	})
	a, err1 := h(context.Background(), order{"ORD-1", 42})
	b, err2 := h(context.Background(), order{"ORD-1", 42})
	if err1 != nil || err2 != nil || a != b || runs.Load() != 1 {
		t.Fatalf("%+v %+v %v %v runs=%d", a, b, err1, err2, runs.Load())
	}
}

// TestConcurrentSameKey: of 50 simultaneous calls with one key the callback runs
// once; every other call gets the stored result or an in-progress error.
func TestConcurrentSameKey(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m, err := idempotency.New(store, idempotency.Options{KeyPrefix: "c", EventKeyJMESPath: "id", LookupEnv: noEnv, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	var replayed, inProgress atomic.Int64
	ctx, cancel := leaseCtx()
	defer cancel()
	for i := range 50 {
		wg.Go(func() {
			got, err := idempotency.Execute(ctx, m, order{"ORD-1", 42}, func(context.Context) (receipt, error) {
				runs.Add(1)
				<-release
				return receipt{OrderID: "ORD-1", Run: 1}, nil
			})
			switch {
			case errors.Is(err, idempotency.ErrAlreadyInProgress):
				inProgress.Add(1)
			case err != nil:
				t.Errorf("call %d: %v", i, err)
			case got != receipt{OrderID: "ORD-1", Run: 1}:
				t.Errorf("call %d got %+v", i, got)
			default:
				replayed.Add(1)
			}
		})
	}
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if runs.Load() != 1 || replayed.Load()+inProgress.Load() != 50 || replayed.Load() < 1 {
		t.Fatalf("runs=%d replayed=%d inProgress=%d", runs.Load(), replayed.Load(), inProgress.Load())
	}
}

func TestInvalidStoredStatus(t *testing.T) {
	t.Parallel()
	store := idempotencytest.NewMemoryStore()
	m := newManager(t, store, func(o *idempotency.Options) { o.PayloadValidationJMESPath = "" })
	key, _, _, _ := m.Key(order{"ORD-1", 42})
	store.Set(idempotency.Record{Key: key, Status: "BOGUS", ExpiresAt: t0.Unix() + 3600})
	var c counter
	_, err := idempotency.Execute(context.Background(), m, order{"ORD-1", 42}, c.fn("a"))
	var ie *idempotency.InvalidStatusError
	if !errors.As(err, &ie) || ie.Status != "BOGUS" || !errors.Is(err, idempotency.ErrInvalidStatus) || c.n.Load() != 0 {
		t.Fatalf("err = %v", err)
	}
}

func TestCustomJMESPathFunctions(t *testing.T) {
	t.Parallel()
	upper := func(args []any) (any, error) {
		s, ok := args[0].(string)
		if !ok {
			return nil, errors.New("want a string")
		}
		return map[string]any{"id": strings.ToUpper(s)}, nil
	}
	m := newManager(t, idempotencytest.NewMemoryStore(), func(o *idempotency.Options) {
		o.EventKeyJMESPath = "normalize(id)"
		o.PayloadValidationJMESPath = ""
		o.JMESPathFunctions = map[string]idempotency.JMESPathFunction{"normalize": upper}
	})
	a, _, _, err := m.Key(order{"ord-1", 1})
	if err != nil {
		t.Fatal(err)
	}
	b, _, _, _ := m.Key(order{"ORD-1", 2})
	want, _ := idempotency.Key("process-order", map[string]any{"id": "ORD-1"}, idempotency.MD5)
	if a != b || a != want {
		t.Fatalf("keys %s %s, want %s", a, b, want)
	}
	if _, _, _, err := m.Key(map[string]any{"id": 1}); !errors.Is(err, idempotency.ErrKey) {
		t.Fatalf("function error: %v", err)
	}
	_, err = idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{
		EventKeyJMESPath: "length(id)", LookupEnv: noEnv,
		JMESPathFunctions: map[string]idempotency.JMESPathFunction{"length": upper},
	})
	if !errors.Is(err, idempotency.ErrInvalidOption) {
		t.Fatalf("shadowing a built-in: %v", err)
	}
}

func TestSerializeKey(t *testing.T) {
	t.Parallel()
	var seen []any
	m := newManager(t, idempotencytest.NewMemoryStore(), func(o *idempotency.Options) {
		o.SerializeKey = func(v any) ([]byte, error) {
			seen = append(seen, v)
			if v == "fail" {
				return nil, errors.New("cannot serialise")
			}
			return json.Marshal(map[string]any{"v": v})
		}
	})
	key, vhash, ok, err := m.Key(order{"ORD-1", 42})
	if err != nil || !ok {
		t.Fatal(err)
	}
	want, _ := idempotency.Key("process-order", map[string]any{"v": "ORD-1"}, idempotency.MD5)
	if key != want || vhash == "" || len(seen) != 2 || seen[1] != float64(42) {
		t.Fatalf("key %s want %s, vhash %q, seen %v", key, want, vhash, seen)
	}
	if _, _, _, err := m.Key(order{"fail", 1}); !errors.Is(err, idempotency.ErrKey) {
		t.Fatalf("serialiser error: %v", err)
	}
}
