package memory

import (
	"context"
	"sync"
	"time"

	"github.com/cairn-go/cairn/idempotency"
)

// Store is an in-memory idempotency.Store, safe for concurrent use. The zero value is
// ready to use. Records are copied in and out, so callers may reuse their buffers.
//
// Expired records are dropped lazily: each time the number of records doubles since
// the last sweep, PutInProgress removes the records that expired, so a long-running
// development server does not grow without bound while the cost per call stays
// constant on average.
type Store struct {
	mu      sync.Mutex
	records map[string]idempotency.Record
	sweepAt int // sweep when len(records) reaches this
}

var _ idempotency.Store = (*Store)(nil)

// minSweep is the record count below which no sweep runs.
const minSweep = 1024

// New returns an empty Store.
func New() *Store { return &Store{} }

// expired reports whether rec no longer blocks a new execution at now: its expiry
// passed, or it is in progress and its execution lease ended (the dynamodb store's
// condition expression).
func expired(rec *idempotency.Record, now time.Time) bool {
	if float64(rec.ExpiresAt) < float64(now.UnixMilli())/1000 {
		return true
	}
	return rec.Status == idempotency.StatusInProgress && rec.InProgressExpiresAt != 0 && rec.InProgressExpiresAt < now.UnixMilli()
}

func clone(rec idempotency.Record) idempotency.Record {
	if rec.Data != nil {
		rec.Data = append(make([]byte, 0, len(rec.Data)), rec.Data...)
	}
	return rec
}

// PutInProgress implements idempotency.Store: it stores rec unless a record for
// rec.Key exists that has not expired at now and is not an in-progress record whose
// lease ended before now; then it returns an *idempotency.ItemAlreadyExistsError
// carrying a copy of the existing record.
func (s *Store) PutInProgress(ctx context.Context, rec idempotency.Record, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec = clone(rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[string]idempotency.Record{}
	}
	if old, ok := s.records[rec.Key]; ok && !expired(&old, now) {
		// The error and its record in one allocation.
		c := &struct {
			err idempotency.ItemAlreadyExistsError
			rec idempotency.Record
		}{rec: clone(old)}
		c.err = idempotency.ItemAlreadyExistsError{Key: rec.Key, Existing: &c.rec}
		return &c.err
	}
	s.records[rec.Key] = rec
	s.maybeSweep(now)
	return nil
}

// maybeSweep drops expired records once the map has doubled since the last sweep.
func (s *Store) maybeSweep(now time.Time) {
	if len(s.records) < max(s.sweepAt, minSweep) {
		return
	}
	for k, r := range s.records {
		if float64(r.ExpiresAt) < float64(now.UnixMilli())/1000 {
			delete(s.records, k)
		}
	}
	s.sweepAt = 2 * len(s.records)
}

// Get implements idempotency.Store; it returns idempotency.ErrItemNotFound when no
// record exists for key.
func (s *Store) Get(ctx context.Context, key string) (idempotency.Record, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, err
	}
	s.mu.Lock()
	rec, ok := s.records[key]
	s.mu.Unlock()
	if !ok {
		return idempotency.Record{}, idempotency.ErrItemNotFound
	}
	return clone(rec), nil
}

// Complete implements idempotency.Store. Like the dynamodb store's UpdateItem it keeps
// the record's in-progress lease attribute and writes everything else.
func (s *Store) Complete(ctx context.Context, rec idempotency.Record, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec = clone(rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[string]idempotency.Record{}
	}
	rec.InProgressExpiresAt = s.records[rec.Key].InProgressExpiresAt
	s.records[rec.Key] = rec
	return nil
}

// Delete implements idempotency.Store. Deleting a missing record is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.records, key)
	s.mu.Unlock()
	return nil
}

// Len returns the number of records held, including expired ones not yet dropped.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}
