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

func TestScheduledRetryConfigIsInvalidOption(t *testing.T) {
	t.Parallel()
	err := merrors.Wrap(merrors.ErrScheduledRetryConfig, stderrors.New("max retry count -1"))
	if !stderrors.Is(err, merrors.ErrScheduledRetryConfig) || !stderrors.Is(err, merrors.ErrInvalidOption) {
		t.Fatalf("%v does not match both sentinels", err)
	}
	if stderrors.Is(merrors.ErrInvalidOption, merrors.ErrScheduledRetryConfig) {
		t.Fatal("ErrInvalidOption matches the narrower ErrScheduledRetryConfig")
	}
	if got, want := merrors.ErrScheduledRetryConfig.Error(), "messaging: invalid scheduled retry configuration"; got != want {
		t.Fatalf("text = %q, want %q", got, want)
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
