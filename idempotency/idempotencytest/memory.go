package idempotencytest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/idempotency"
)

// MemoryStore is an in-process idempotency.Store with the DynamoDB store's conditional
// semantics. It counts requests so tests and benchmarks can assert store round trips.
// The zero value is ready to use.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]idempotency.Record
	// ReturnExisting makes conflicts carry the existing record (like DynamoDB ALL_OLD).
	ReturnExisting bool

	Puts, Gets, Completes, Deletes atomic.Int64
}

// NewMemoryStore returns a store that returns the existing record with conflicts.
func NewMemoryStore() *MemoryStore { return &MemoryStore{ReturnExisting: true} }

// Requests returns the total number of store calls.
func (s *MemoryStore) Requests() int64 {
	return s.Puts.Load() + s.Gets.Load() + s.Completes.Load() + s.Deletes.Load()
}

// PutInProgress implements idempotency.Store.
func (s *MemoryStore) PutInProgress(ctx context.Context, rec idempotency.Record, now time.Time) error {
	s.Puts.Add(1)
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[string]idempotency.Record{}
	}
	if old, ok := s.records[rec.Key]; ok {
		nowSec := float64(now.UnixMilli()) / 1000
		expired := float64(old.ExpiresAt) < nowSec
		leaseOver := old.Status == idempotency.StatusInProgress && old.InProgressExpiresAt != 0 && old.InProgressExpiresAt < now.UnixMilli()
		if !expired && !leaseOver {
			e := &idempotency.ItemAlreadyExistsError{Key: rec.Key}
			if s.ReturnExisting {
				cp := old
				e.Existing = &cp
			}
			return e
		}
	}
	s.records[rec.Key] = rec
	return nil
}

// Get implements idempotency.Store.
func (s *MemoryStore) Get(ctx context.Context, key string) (idempotency.Record, error) {
	s.Gets.Add(1)
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records[key]
	if !ok {
		return idempotency.Record{}, idempotency.ErrItemNotFound
	}
	return rec, nil
}

// Complete implements idempotency.Store.
func (s *MemoryStore) Complete(ctx context.Context, rec idempotency.Record, _ time.Time) error {
	s.Completes.Add(1)
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[string]idempotency.Record{}
	}
	old := s.records[rec.Key]
	rec.InProgressExpiresAt = old.InProgressExpiresAt // UpdateItem leaves the lease attribute
	s.records[rec.Key] = rec
	return nil
}

// Delete implements idempotency.Store.
func (s *MemoryStore) Delete(ctx context.Context, key string) error {
	s.Deletes.Add(1)
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
	return nil
}

// Set stores rec directly, for arranging test state.
func (s *MemoryStore) Set(rec idempotency.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[string]idempotency.Record{}
	}
	s.records[rec.Key] = rec
}
