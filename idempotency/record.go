package idempotency

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Status is a record's lifecycle state, stored verbatim.
type Status string

// Record states. Expired is never stored; it is what an expired record reports.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
	StatusExpired    Status = "EXPIRED"
)

// Record is one idempotency record as the stores persist it.
type Record struct {
	// Key is the logical idempotency key, <prefix>#<digest>. In a DynamoDB sort-key
	// layout it is the sort key value.
	Key    string
	Status Status
	// ExpiresAt is the record expiry in Unix seconds (the "expiration" attribute).
	ExpiresAt int64
	// InProgressExpiresAt is the execution lease end in Unix milliseconds
	// ("in_progress_expiration"); 0 means none was recorded.
	InProgressExpiresAt int64
	// Data is the stored response as JSON; nil when the record has none.
	Data json.RawMessage
	// ValidationHash is the payload validation digest; "" when validation is off.
	ValidationHash string
}

// Expired reports whether the record's expiry has passed at now, as the reference
// computes it (now in fractional seconds greater than ExpiresAt).
func (r *Record) Expired(now time.Time) bool {
	if r.ExpiresAt == 0 {
		return false
	}
	return float64(now.UnixMilli())/1000 > float64(r.ExpiresAt)
}

// EffectiveStatus returns StatusExpired for an expired record and validates the stored
// status otherwise.
func (r *Record) EffectiveStatus(now time.Time) (Status, error) {
	if r.Expired(now) {
		return StatusExpired, nil
	}
	switch r.Status {
	case StatusInProgress, StatusCompleted, StatusExpired:
		return r.Status, nil
	}
	return "", &InvalidStatusError{Key: r.Key, Status: string(r.Status)}
}

// InvalidStatusError reports a stored record whose status is none of the known ones.
type InvalidStatusError struct {
	Key    string
	Status string
}

// Error implements error.
func (e *InvalidStatusError) Error() string {
	return fmt.Sprintf("idempotency: record %q has invalid status %q", e.Key, e.Status)
}

// Is matches ErrInvalidStatus.
func (e *InvalidStatusError) Is(target error) bool { return target == ErrInvalidStatus }

// Store persists idempotency records. Implementations must be safe for concurrent use
// and are proven by idempotencytest.RunStoreSuite.
type Store interface {
	// PutInProgress atomically creates rec (Status INPROGRESS) unless a record exists
	// for rec.Key that is neither expired at now nor an INPROGRESS record whose lease
	// ended before now. On conflict it returns an *ItemAlreadyExistsError, with the
	// existing record when the backend returns it in the same request.
	PutInProgress(ctx context.Context, rec Record, now time.Time) error
	// Get reads a record with strong consistency; ErrItemNotFound when absent.
	Get(ctx context.Context, key string) (Record, error)
	// Complete stores the COMPLETED state, expiry, response and validation hash.
	Complete(ctx context.Context, rec Record, now time.Time) error
	// Delete removes the record (after a business error).
	Delete(ctx context.Context, key string) error
}
