package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/internal/jsvalue"
)

// Client is the part of go-redis the store uses; *redis.Client, *redis.ClusterClient
// and redis.UniversalClient satisfy it.
type Client interface {
	SetArgs(ctx context.Context, key string, value any, a goredis.SetArgs) *goredis.StatusCmd
	Get(ctx context.Context, key string) *goredis.StringCmd
	Del(ctx context.Context, keys ...string) *goredis.IntCmd
}

// ErrCorruptRecord reports a stored value that is not a record (the reference's
// IdempotencyPersistenceConsistencyError). PutInProgress treats such a value as an
// orphan and takes it over.
var ErrCorruptRecord = errors.New("idempotency/redis: stored record is not valid JSON")

// OrphanLockTimeout is how long the takeover lock lives. The reference computes
// min(10s, expiresAfterSeconds) before configuration, so it is always 10 seconds.
const OrphanLockTimeout = 10 * time.Second

// Options configure a Store. Attribute names default to the reference's.
type Options struct {
	StatusAttr           string // default "status"
	ExpiryAttr           string // default "expiration"
	InProgressExpiryAttr string // default "in_progress_expiration"
	DataAttr             string // default "data"
	ValidationAttr       string // default "validation"
}

// Store is an idempotency.Store backed by Redis or Valkey.
type Store struct {
	c                                            Client
	status, expiry, inProgress, data, validation string
}

var _ idempotency.Store = (*Store)(nil)

// New validates opts and returns a Store. It sends no command.
func New(c Client, opts Options) (*Store, error) {
	if c == nil {
		return nil, &idempotency.OptionError{Field: "client", Value: nil, Reason: "a Redis client is required"}
	}
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	s := &Store{
		c:          c,
		status:     def(opts.StatusAttr, "status"),
		expiry:     def(opts.ExpiryAttr, "expiration"),
		inProgress: def(opts.InProgressExpiryAttr, "in_progress_expiration"),
		data:       def(opts.DataAttr, "data"),
		validation: def(opts.ValidationAttr, "validation"),
	}
	seen := map[string]string{}
	for _, f := range []struct{ field, name string }{
		{"StatusAttr", s.status}, {"ExpiryAttr", s.expiry}, {"InProgressExpiryAttr", s.inProgress},
		{"DataAttr", s.data}, {"ValidationAttr", s.validation},
	} {
		if other, dup := seen[f.name]; dup {
			return nil, &idempotency.OptionError{Field: f.field, Value: f.name, Reason: "same attribute name as " + other}
		}
		seen[f.name] = f.field
	}
	return s, nil
}

// ttl is the reference's expiryTimestamp - Math.floor(Date.now()/1000), at least 1s
// so that a record never lives without expiry.
func ttl(expiresAt int64, now time.Time) time.Duration {
	secs := expiresAt - int64(math.Floor(float64(now.UnixMilli())/1000))
	if secs < 1 {
		secs = 1
	}
	return time.Duration(secs) * time.Second
}

func (s *Store) encodeInProgress(rec idempotency.Record) []byte {
	b := []byte{'{'}
	b = jsvalue.AppendQuoted(b, s.status)
	b = append(b, ':')
	b = jsvalue.AppendQuoted(b, string(rec.Status))
	b = append(b, ',')
	b = jsvalue.AppendQuoted(b, s.expiry)
	b = append(b, ':')
	b = strconv.AppendInt(b, rec.ExpiresAt, 10)
	if rec.InProgressExpiresAt != 0 {
		b = append(b, ',')
		b = jsvalue.AppendQuoted(b, s.inProgress)
		b = append(b, ':')
		b = strconv.AppendInt(b, rec.InProgressExpiresAt, 10)
	}
	if rec.ValidationHash != "" {
		b = append(b, ',')
		b = jsvalue.AppendQuoted(b, s.validation)
		b = append(b, ':')
		b = jsvalue.AppendQuoted(b, rec.ValidationHash)
	}
	return append(b, '}')
}

// PutInProgress acquires the key with SET NX EX. On conflict it reads the record:
// a live COMPLETED record or an INPROGRESS record with a running lease is a conflict;
// anything else is an orphan, taken over under the <key>:lock lock.
func (s *Store) PutInProgress(ctx context.Context, rec idempotency.Record, now time.Time) error {
	item := s.encodeInProgress(rec)
	exp := ttl(rec.ExpiresAt, now)
	err := s.c.SetArgs(ctx, rec.Key, item, goredis.SetArgs{Mode: "NX", TTL: exp}).Err()
	if err == nil {
		return nil
	}
	if !errors.Is(err, goredis.Nil) {
		return err
	}
	existing, err := s.Get(ctx, rec.Key)
	switch {
	case errors.Is(err, idempotency.ErrItemNotFound):
		// Expired between SET and GET: the manager re-reads and retries.
		return &idempotency.ItemAlreadyExistsError{Key: rec.Key}
	case errors.Is(err, ErrCorruptRecord):
	case err != nil:
		return err
	default:
		status, serr := existing.EffectiveStatus(now)
		if serr != nil {
			return serr
		}
		if status == idempotency.StatusCompleted {
			return &idempotency.ItemAlreadyExistsError{Key: rec.Key, Existing: &existing}
		}
		if status == idempotency.StatusInProgress && existing.InProgressExpiresAt != 0 && existing.InProgressExpiresAt > now.UnixMilli() {
			return &idempotency.ItemAlreadyExistsError{Key: rec.Key, Existing: &existing}
		}
	}
	// Orphaned record: take it over if no one else is doing so.
	lockErr := s.c.SetArgs(ctx, rec.Key+":lock", "true", goredis.SetArgs{Mode: "NX", TTL: OrphanLockTimeout}).Err()
	if errors.Is(lockErr, goredis.Nil) {
		return &idempotency.ItemAlreadyExistsError{Key: rec.Key}
	}
	if lockErr != nil {
		return lockErr
	}
	return s.c.SetArgs(ctx, rec.Key, item, goredis.SetArgs{TTL: exp}).Err()
}

type storedRecord map[string]json.RawMessage

// Get reads and decodes the record.
func (s *Store) Get(ctx context.Context, key string) (idempotency.Record, error) {
	raw, err := s.c.Get(ctx, key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return idempotency.Record{}, idempotency.ErrItemNotFound
	}
	if err != nil {
		return idempotency.Record{}, err
	}
	var m storedRecord
	if err := json.Unmarshal(raw, &m); err != nil {
		return idempotency.Record{}, fmt.Errorf("%w: %s: %v", ErrCorruptRecord, key, err)
	}
	rec := idempotency.Record{Key: key}
	var status, validation string
	if err := decodeOptional(m[s.status], &status); err != nil {
		return rec, fmt.Errorf("%w: %s: %v", ErrCorruptRecord, key, err)
	}
	if err := decodeOptional(m[s.validation], &validation); err != nil {
		return rec, fmt.Errorf("%w: %s: %v", ErrCorruptRecord, key, err)
	}
	rec.Status, rec.ValidationHash = idempotency.Status(status), validation
	for _, f := range []struct {
		raw json.RawMessage
		dst *int64
	}{{m[s.expiry], &rec.ExpiresAt}, {m[s.inProgress], &rec.InProgressExpiresAt}} {
		var n float64
		if err := decodeOptional(f.raw, &n); err != nil {
			return rec, fmt.Errorf("%w: %s: %v", ErrCorruptRecord, key, err)
		}
		*f.dst = int64(n)
	}
	if d, ok := m[s.data]; ok {
		rec.Data = d
	}
	return rec, nil
}

func decodeOptional(raw json.RawMessage, dst any) error {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// Complete overwrites the record with its COMPLETED form and a fresh expiry. Unlike
// the reference it also keeps the validation hash, without which the reference
// rejects every replay of a validated request with a validation error.
func (s *Store) Complete(ctx context.Context, rec idempotency.Record, now time.Time) error {
	b := []byte{'{'}
	b = jsvalue.AppendQuoted(b, s.status)
	b = append(b, ':')
	b = jsvalue.AppendQuoted(b, string(rec.Status))
	b = append(b, ',')
	b = jsvalue.AppendQuoted(b, s.expiry)
	b = append(b, ':')
	b = strconv.AppendInt(b, rec.ExpiresAt, 10)
	if rec.Data != nil {
		data, err := jsonStringify(rec.Data)
		if err != nil {
			return &idempotency.UnsupportedValueError{Reason: "response is not valid JSON", Err: err}
		}
		b = append(b, ',')
		b = jsvalue.AppendQuoted(b, s.data)
		b = append(b, ':')
		b = append(b, data...)
	}
	if rec.ValidationHash != "" {
		b = append(b, ',')
		b = jsvalue.AppendQuoted(b, s.validation)
		b = append(b, ':')
		b = jsvalue.AppendQuoted(b, rec.ValidationHash)
	}
	b = append(b, '}')
	return s.c.SetArgs(ctx, rec.Key, b, goredis.SetArgs{TTL: ttl(rec.ExpiresAt, now)}).Err()
}

// Delete removes the record.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.c.Del(ctx, key).Err()
}

// jsonStringify rewrites encoding/json output the way JSON.stringify writes the same
// value (no HTML or U+2028 escaping), keeping key order and number tokens.
func jsonStringify(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []byte
	type frame struct {
		obj   bool
		count int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out = append(out, byte(d))
			continue
		}
		if n := len(stack); n > 0 {
			f := &stack[n-1]
			switch {
			case f.obj && f.count%2 == 1:
				out = append(out, ':')
			case f.count > 0:
				out = append(out, ',')
			}
			f.count++
		}
		switch x := tok.(type) {
		case json.Delim:
			out = append(out, byte(x))
			stack = append(stack, frame{obj: x == '{'})
		case string:
			out = jsvalue.AppendQuoted(out, jsvalue.FromGo(x))
		case json.Number:
			out = append(out, x...)
		case bool:
			out = strconv.AppendBool(out, x)
		case nil:
			out = append(out, "null"...)
		}
	}
}
