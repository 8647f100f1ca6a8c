// Package errors holds the sentinel errors of the messaging packages and the
// types that classify a handler's error as retryable, fatal or a backoff
// request.
//
// Sentinels are matched with errors.Is; the classification types are matched
// with errors.As, so a handler can wrap them freely with fmt.Errorf("...: %w").
package errors

import (
	stderrors "errors"
	"time"
)

// Sentinel errors of the messaging packages. Their texts are loafer-awsx
// 0.6.0's, so logs, alerts and tests that match on them carry over; compare
// errors with errors.Is all the same.
var (
	ErrNoRoute        = New("no routes registered")
	ErrNoSQSClient    = New("sqs client is nil")
	ErrNoHandler      = New("handler is nil")
	ErrGetMessage     = New("failed to receive messages")
	ErrQueueResolve   = New("failed to resolve queue url")
	ErrNoSNSClient    = New("sns client is nil")
	ErrEmptyInput     = New("input must be filled")
	ErrMaxBatchSize   = New("batch size exceeds the maximum allowed")
	ErrEmptyRegion    = New("region must be filled")
	ErrEmptyQueueName = New("queue name must be filled")
	ErrInvalidOption  = New("invalid option")
	ErrEmptyFields    = New("fields must be filled")
	ErrPanic          = New("handler panicked")
	// ErrScheduledRetryConfig marks an invalid Scheduled Retry setting. The
	// errors router.New returns for one match ErrInvalidOption too, so code
	// checking for any bad option keeps working; the sentinels themselves
	// stay distinct.
	ErrScheduledRetryConfig = New("invalid scheduled retry configuration")
	// ErrNoSchedulerClient marks a Scheduled Retry route given to a consumer
	// without an EventBridge Scheduler client; the consumer does not start.
	ErrNoSchedulerClient = New("scheduler client is nil")
	// ErrDeleteBatchUnsupported marks a route with router.WithDeleteBatch
	// given to a consumer whose SQS client has no DeleteMessageBatch; the
	// consumer does not start.
	ErrDeleteBatchUnsupported = New("sqs client does not support DeleteMessageBatch")
	// ErrEntryTooLarge marks a batch entry larger than the service accepts.
	ErrEntryTooLarge = New("batch entry exceeds the maximum size")
	// ErrGroupBlocked marks a FIFO entry that was not published because an
	// earlier entry of its message group failed: publishing it would put it
	// ahead of that entry.
	ErrGroupBlocked = New("earlier entry of the message group failed")
	// ErrRetryScheduleCreate marks a Scheduled Retry attempt whose EventBridge
	// schedule could not be created; the message stays on its queue.
	ErrRetryScheduleCreate = New("failed to create retry schedule")
	// ErrDLQPublish marks a message that could not be published to its
	// dead-letter queue; the message stays on its queue.
	ErrDLQPublish = New("failed to publish to dead-letter queue")
	// ErrPingFailed marks a client whose connectivity check, made by the
	// client package's constructors, did not succeed within its timeout and
	// retries; it wraps the last attempt's error.
	ErrPingFailed = New("connectivity ping failed")
)

// New returns an error with the given text, like the standard errors.New.
func New(text string) error { return stderrors.New(text) }

// Wrap returns an error that matches both sentinel and err with errors.Is.
// A nil err returns sentinel; a nil sentinel returns err.
func Wrap(sentinel, err error) error {
	switch {
	case err == nil:
		return sentinel
	case sentinel == nil:
		return err
	}
	return &wrapped{sentinel: sentinel, err: err}
}

type wrapped struct{ sentinel, err error }

func (w *wrapped) Error() string   { return w.sentinel.Error() + ": " + w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.sentinel, w.err} }

// FatalError marks a handler error that retrying cannot fix (a poison
// message). The consumer stops retrying it: it reports it to the DLQ observer
// and releases it so the queue's redrive policy moves it, or, under the
// scheduled retry model, publishes it to the DLQ at once.
type FatalError struct{ Err error }

func (e *FatalError) Error() string {
	if e.Err == nil {
		return "fatal"
	}
	return "fatal: " + e.Err.Error()
}
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal marks err as not retryable. Fatal(nil) returns nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &FatalError{Err: err}
}

// BackoffError is a handler error that asks for the message to be retried
// after Delay rather than after the route's default backoff.
type BackoffError struct {
	Err   error
	Delay time.Duration
}

func (e *BackoffError) Error() string {
	msg := "backoff " + e.Delay.String()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}
func (e *BackoffError) Unwrap() error { return e.Err }

// Backoff returns an error asking for a retry after delay. A negative delay
// is treated as zero.
func Backoff(err error, delay time.Duration) error {
	if delay < 0 {
		delay = 0
	}
	return &BackoffError{Err: err, Delay: delay}
}

// Class is the outcome a consumer derives from a handler's error.
type Class int

// The classes of a handler result.
const (
	// Success: the message is deleted.
	Success Class = iota
	// Retry: the message is retried with the route's backoff; the default
	// for any error that is neither fatal nor a backoff request.
	Retry
	// BackoffRequested: the message is retried after the requested delay.
	BackoffRequested
	// Fatal: the message is not retried; it goes to the DLQ path.
	FatalClass
)

// String names the class for logs.
func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case Retry:
		return "retry"
	case BackoffRequested:
		return "backoff"
	case FatalClass:
		return "fatal"
	}
	return "unknown"
}

// Classify returns the class of err and, for BackoffRequested, the delay.
// A FatalError anywhere in the chain wins over a BackoffError.
func Classify(err error) (Class, time.Duration) {
	if err == nil {
		return Success, 0
	}
	var fe *FatalError
	if stderrors.As(err, &fe) {
		return FatalClass, 0
	}
	var be *BackoffError
	if stderrors.As(err, &be) {
		return BackoffRequested, be.Delay
	}
	return Retry, 0
}
