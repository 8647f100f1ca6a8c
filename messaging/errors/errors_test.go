package errors_test

import (
	stderrors "errors"
	"fmt"
	"testing"
	"time"

	merrors "github.com/cairn-go/cairn/messaging/errors"
)

func TestWrapMatchesBoth(t *testing.T) {
	t.Parallel()
	cause := stderrors.New("boom")
	err := merrors.Wrap(merrors.ErrQueueResolve, cause)
	if !stderrors.Is(err, merrors.ErrQueueResolve) || !stderrors.Is(err, cause) {
		t.Fatalf("Wrap lost a cause: %v", err)
	}
	if got := merrors.Wrap(merrors.ErrNoRoute, nil); got != merrors.ErrNoRoute {
		t.Fatalf("Wrap(s, nil) = %v", got)
	}
	if got := merrors.Wrap(nil, cause); got != cause {
		t.Fatalf("Wrap(nil, e) = %v", got)
	}
}

// The texts are loafer-awsx 0.6.0's: programs and tests migrating from it
// match on them.
func TestSentinelTexts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{merrors.ErrNoRoute, "no routes registered"},
		{merrors.ErrNoSQSClient, "sqs client is nil"},
		{merrors.ErrNoHandler, "handler is nil"},
		{merrors.ErrGetMessage, "failed to receive messages"},
		{merrors.ErrQueueResolve, "failed to resolve queue url"},
		{merrors.ErrNoSNSClient, "sns client is nil"},
		{merrors.ErrEmptyInput, "input must be filled"},
		{merrors.ErrMaxBatchSize, "batch size exceeds the maximum allowed"},
		{merrors.ErrEmptyRegion, "region must be filled"},
		{merrors.ErrEmptyQueueName, "queue name must be filled"},
		{merrors.ErrInvalidOption, "invalid option"},
		{merrors.ErrEmptyFields, "fields must be filled"},
		{merrors.ErrPanic, "handler panicked"},
		{merrors.ErrRetryScheduleCreate, "failed to create retry schedule"},
		{merrors.ErrDLQPublish, "failed to publish to dead-letter queue"},
		{merrors.ErrScheduledRetryConfig, "invalid scheduled retry configuration"},
		{merrors.ErrNoSchedulerClient, "scheduler client is nil"},
		{merrors.ErrPingFailed, "connectivity ping failed"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("text = %q, want %q", got, tt.want)
		}
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	t.Parallel()
	all := []error{
		merrors.ErrNoRoute, merrors.ErrNoSQSClient, merrors.ErrNoHandler, merrors.ErrGetMessage,
		merrors.ErrQueueResolve, merrors.ErrNoSNSClient, merrors.ErrEmptyInput, merrors.ErrMaxBatchSize,
		merrors.ErrEmptyRegion, merrors.ErrEmptyQueueName, merrors.ErrInvalidOption, merrors.ErrEmptyFields,
		merrors.ErrPanic, merrors.ErrScheduledRetryConfig, merrors.ErrNoSchedulerClient, merrors.ErrEntryTooLarge,
		merrors.ErrGroupBlocked, merrors.ErrRetryScheduleCreate, merrors.ErrDLQPublish, merrors.ErrPingFailed,
	}
	for i, a := range all {
		for j, b := range all {
			if i != j && stderrors.Is(a, b) {
				t.Errorf("%q matches %q", a, b)
			}
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	plain := stderrors.New("x")
	tests := []struct {
		name  string
		err   error
		class merrors.Class
		delay time.Duration
	}{
		{"nil", nil, merrors.Success, 0},
		{"plain", plain, merrors.Retry, 0},
		{"panic", merrors.Wrap(merrors.ErrPanic, plain), merrors.Retry, 0},
		{"fatal", merrors.Fatal(plain), merrors.FatalClass, 0},
		{"wrapped fatal", fmt.Errorf("ctx: %w", merrors.Fatal(plain)), merrors.FatalClass, 0},
		{"backoff", merrors.Backoff(plain, time.Minute), merrors.BackoffRequested, time.Minute},
		{"negative backoff", merrors.Backoff(nil, -time.Second), merrors.BackoffRequested, 0},
		{"fatal wins", merrors.Fatal(merrors.Backoff(plain, time.Second)), merrors.FatalClass, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, d := merrors.Classify(tt.err)
			if c != tt.class || d != tt.delay {
				t.Fatalf("Classify(%v) = %v,%v want %v,%v", tt.err, c, d, tt.class, tt.delay)
			}
		})
	}
	if merrors.Fatal(nil) != nil {
		t.Fatal("Fatal(nil) != nil")
	}
}
