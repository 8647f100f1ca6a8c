package idempotencytest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/memory"
)

// MemoryStore is the memory store (idempotency/memory) instrumented for tests and
// benchmarks: it counts requests, can hide the existing record from conflicts, and
// can arrange state with Set. The zero value is ready to use and hides the existing
// record, so the manager must read it with Get (the path a store without ALL_OLD
// takes).
type MemoryStore struct {
	store memory.Store
	// ReturnExisting makes conflicts carry the existing record (like DynamoDB ALL_OLD).
	ReturnExisting bool

	Puts, Gets, Completes, Deletes atomic.Int64
}

var _ idempotency.Store = (*MemoryStore)(nil)

// NewMemoryStore returns a store that returns the existing record with conflicts.
func NewMemoryStore() *MemoryStore { return &MemoryStore{ReturnExisting: true} }

// Requests returns the total number of store calls.
func (s *MemoryStore) Requests() int64 {
	return s.Puts.Load() + s.Gets.Load() + s.Completes.Load() + s.Deletes.Load()
}

// PutInProgress implements idempotency.Store.
func (s *MemoryStore) PutInProgress(ctx context.Context, rec idempotency.Record, now time.Time) error {
	s.Puts.Add(1)
	err := s.store.PutInProgress(ctx, rec, now)
	if exists, ok := err.(*idempotency.ItemAlreadyExistsError); ok && !s.ReturnExisting {
		return &idempotency.ItemAlreadyExistsError{Key: exists.Key}
	}
	return err
}

// Get implements idempotency.Store.
func (s *MemoryStore) Get(ctx context.Context, key string) (idempotency.Record, error) {
	s.Gets.Add(1)
	return s.store.Get(ctx, key)
}

// Complete implements idempotency.Store.
func (s *MemoryStore) Complete(ctx context.Context, rec idempotency.Record, now time.Time) error {
	s.Completes.Add(1)
	return s.store.Complete(ctx, rec, now)
}

// Delete implements idempotency.Store.
func (s *MemoryStore) Delete(ctx context.Context, key string) error {
	s.Deletes.Add(1)
	return s.store.Delete(ctx, key)
}

// Set stores rec as is, replacing any record for rec.Key, to arrange test state. It
// is not counted as a request.
func (s *MemoryStore) Set(rec idempotency.Record) {
	ctx := context.Background()
	_ = s.store.Delete(ctx, rec.Key)
	_ = s.store.PutInProgress(ctx, rec, time.Time{})
}
