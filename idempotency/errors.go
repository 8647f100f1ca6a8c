package idempotency

import (
	"errors"
	"fmt"
)

// Sentinel errors, one per reference error class. Every typed error below matches its
// sentinel with errors.Is.
var (
	// ErrItemAlreadyExists: the store refused to create a record because a live one
	// exists (IdempotencyItemAlreadyExistsError). Stores return it from PutInProgress.
	ErrItemAlreadyExists = errors.New("idempotency: item already exists")
	// ErrItemNotFound: the store holds no record for the key (IdempotencyItemNotFoundError).
	ErrItemNotFound = errors.New("idempotency: item not found")
	// ErrAlreadyInProgress: another execution holds a valid lease for the same key
	// (IdempotencyAlreadyInProgressError). Retry later; the callback did not run.
	ErrAlreadyInProgress = errors.New("idempotency: execution already in progress")
	// ErrValidation: the payload validation hash differs from the stored record's
	// (IdempotencyValidationError).
	ErrValidation = errors.New("idempotency: payload does not match stored record")
	// ErrInconsistentState: the record changed between the conditional write and the
	// read (IdempotencyInconsistentStateError); retried up to MaxRetries times.
	ErrInconsistentState = errors.New("idempotency: inconsistent record state")
	// ErrPersistence: the store failed (IdempotencyPersistenceLayerError).
	ErrPersistence = errors.New("idempotency: persistence layer error")
	// ErrKey: no idempotency key could be derived while ThrowOnNoKey is set, or the
	// key expression failed (IdempotencyKeyError).
	ErrKey = errors.New("idempotency: no idempotency key")
	// ErrInvalidStatus: a stored record has an unknown status (IdempotencyInvalidStatusError).
	ErrInvalidStatus = errors.New("idempotency: invalid record status")
	// ErrInvalidOption: a constructor option is invalid.
	ErrInvalidOption = errors.New("idempotency: invalid option")
	// ErrUnsupportedValue: a payload or response cannot be represented as JSON.
	ErrUnsupportedValue = errors.New("idempotency: value not representable as JSON")
)

// MaxRetries is how often an execution is retried after ErrInconsistentState, as in
// the reference (so at most three attempts).
const MaxRetries = 2

// ItemAlreadyExistsError is returned by Store.PutInProgress when a live record exists.
// Existing is the stored record when the store returned it with the conflict (DynamoDB
// ALL_OLD); nil means the manager must read it.
type ItemAlreadyExistsError struct {
	Key      string
	Existing *Record
}

// Error implements error.
func (e *ItemAlreadyExistsError) Error() string {
	return "idempotency: failed to put record for already existing idempotency key: " + e.Key
}

// Is matches ErrItemAlreadyExists.
func (e *ItemAlreadyExistsError) Is(target error) bool { return target == ErrItemAlreadyExists }

// AlreadyInProgressError reports a concurrent execution holding the key's lease.
type AlreadyInProgressError struct {
	Key      string
	Existing *Record
}

// Error implements error.
func (e *AlreadyInProgressError) Error() string {
	return "idempotency: there is already an execution in progress with idempotency key: " + e.Key
}

// Is matches ErrAlreadyInProgress.
func (e *AlreadyInProgressError) Is(target error) bool { return target == ErrAlreadyInProgress }

// Temporary reports that retrying later can succeed.
func (e *AlreadyInProgressError) Temporary() bool { return true }

// ValidationError reports a payload whose validation hash differs from the record's.
type ValidationError struct {
	Key      string
	Existing *Record
}

// Error implements error.
func (e *ValidationError) Error() string {
	return "idempotency: payload does not match stored record for idempotency key: " + e.Key
}

// Is matches ErrValidation.
func (e *ValidationError) Is(target error) bool { return target == ErrValidation }

// PersistenceError wraps a store failure with the lifecycle step that failed.
type PersistenceError struct {
	Op  string // "save in progress", "get", "update success", "delete"
	Key string
	Err error
}

// Error implements error.
func (e *PersistenceError) Error() string {
	return fmt.Sprintf("idempotency: failed to %s record %q: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the store's error.
func (e *PersistenceError) Unwrap() error { return e.Err }

// Is matches ErrPersistence.
func (e *PersistenceError) Is(target error) bool { return target == ErrPersistence }

// KeyError reports that no idempotency key was found or the key expression failed.
type KeyError struct {
	Query  string // the JMESPath expression, "" for the whole payload
	Reason string
	Err    error
}

// Error implements error.
func (e *KeyError) Error() string {
	msg := "idempotency: " + e.Reason
	if e.Query != "" {
		msg += fmt.Sprintf(" (jmespath %q)", e.Query)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *KeyError) Unwrap() error { return e.Err }

// Is matches ErrKey.
func (e *KeyError) Is(target error) bool { return target == ErrKey }

// InconsistentStateError reports a record that expired or lost its lease between the
// conditional write and the read.
type InconsistentStateError struct {
	Key    string
	Reason string
}

// Error implements error.
func (e *InconsistentStateError) Error() string {
	return "idempotency: " + e.Reason + ": " + e.Key
}

// Is matches ErrInconsistentState.
func (e *InconsistentStateError) Is(target error) bool { return target == ErrInconsistentState }

// OptionError names an invalid configuration field and its value.
type OptionError struct {
	Field  string
	Value  any
	Reason string
}

// Error implements error.
func (e *OptionError) Error() string {
	return fmt.Sprintf("idempotency: invalid option %s=%v: %s", e.Field, e.Value, e.Reason)
}

// Is matches ErrInvalidOption.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

// UnsupportedValueError reports a payload or response that JSON cannot represent.
type UnsupportedValueError struct {
	Reason string
	Err    error
}

// Error implements error.
func (e *UnsupportedValueError) Error() string {
	if e.Err != nil {
		return "idempotency: " + e.Reason + ": " + e.Err.Error()
	}
	return "idempotency: " + e.Reason
}

// Unwrap returns the encoder's error.
func (e *UnsupportedValueError) Unwrap() error { return e.Err }

// Is matches ErrUnsupportedValue.
func (e *UnsupportedValueError) Is(target error) bool { return target == ErrUnsupportedValue }
