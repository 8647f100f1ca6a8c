package router_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func noop(context.Context, middleware.Message) error { return nil }

func TestDefaults(t *testing.T) {
	t.Parallel()
	r, err := router.New("q", noop)
	if err != nil {
		t.Fatal(err)
	}
	if r.WorkerPoolSize() != 5 || r.MaxMessages() != 10 || r.WaitTimeSeconds() != 10 ||
		r.VisibilityTimeout() != 30 || r.ExtensionLimit() != 2 || r.RunMode() != router.Parallel ||
		r.RetryModel() != router.VisibilityRetryModel || r.Pollers() != 1 {
		t.Fatalf("unexpected defaults: %+v", r)
	}
	if r.DLQ() != nil || r.ScheduledRetry() != nil {
		t.Fatal("DLQ enabled by default")
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	valid := router.WithScheduledRetry(
		router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"),
		router.WithScheduledDLQ("https://sqs/1/dlq.fifo"))
	tests := []struct {
		name    string
		queue   string
		handler middleware.Handler
		opts    []router.Option
		want    error
		mention string
	}{
		{"empty queue", "", noop, nil, merrors.ErrEmptyQueueName, ""},
		{"nil handler", "q", nil, nil, merrors.ErrNoHandler, ""},
		{"workers 0", "q", noop, []router.Option{router.WithWorkerPoolSize(0)}, merrors.ErrInvalidOption, "0"},
		{"max messages 11", "q", noop, []router.Option{router.WithMaxMessages(11)}, merrors.ErrInvalidOption, "11"},
		{"max messages 0", "q", noop, []router.Option{router.WithMaxMessages(0)}, merrors.ErrInvalidOption, "0"},
		{"wait 21", "q", noop, []router.Option{router.WithWaitTimeSeconds(21)}, merrors.ErrInvalidOption, "21"},
		{"wait -1", "q", noop, []router.Option{router.WithWaitTimeSeconds(-1)}, merrors.ErrInvalidOption, "-1"},
		{"visibility > 12h", "q", noop, []router.Option{router.WithVisibilityTimeout(43201)}, merrors.ErrInvalidOption, "43201"},
		{"extension -1", "q", noop, []router.Option{router.WithExtensionLimit(-1)}, merrors.ErrInvalidOption, "-1"},
		{"mode", "q", noop, []router.Option{router.WithRunMode(7)}, merrors.ErrInvalidOption, "7"},
		{"dlq 0", "q", noop, []router.Option{router.WithDLQ(0)}, merrors.ErrInvalidOption, "0"},
		{"pollers 0", "q", noop, []router.Option{router.WithPollers(0)}, merrors.ErrInvalidOption, "0"},
		{"retry backoff inverted", "q", noop, []router.Option{router.WithRetryBackoff(time.Minute, time.Second)}, merrors.ErrInvalidOption, "1m0s"},
		{"retry model", "q", noop, []router.Option{router.WithRetryModel(9)}, merrors.ErrScheduledRetryConfig, "9"},
		{"scheduled model without config", "q.fifo", noop, []router.Option{router.WithRetryModel(router.ScheduledRetryModel)}, merrors.ErrScheduledRetryConfig, "WithScheduledRetry"},
		{"scheduled missing role", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", ""), router.WithScheduledDLQ("u"))},
			merrors.ErrScheduledRetryConfig, "execution role"},
		{"scheduled missing target", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("", "arn:aws:iam::1:role/r"), router.WithScheduledDLQ("u"))},
			merrors.ErrScheduledRetryConfig, "target queue"},
		{"scheduled missing dlq", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"))},
			merrors.ErrScheduledRetryConfig, "DLQ"},
		{"scheduled retry count", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"),
			router.WithScheduledDLQ("u"), router.WithMaxRetryCount(-1))}, merrors.ErrScheduledRetryConfig, "-1"},
		{"scheduled backoff range", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"),
			router.WithScheduledDLQ("u"), router.WithBackoff(time.Millisecond, 25*time.Hour))}, merrors.ErrScheduledRetryConfig, "25h"},
		{"scheduler dead letter fifo", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"),
			router.WithScheduledDLQ("u"), router.WithSchedulerDeadLetter("arn:aws:sqs:us-east-1:000000000001:lost.fifo"))},
			merrors.ErrScheduledRetryConfig, "lost.fifo"},
		{"scheduler dead letter url", "q.fifo", noop, []router.Option{router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"),
			router.WithScheduledDLQ("u"), router.WithSchedulerDeadLetter("https://sqs.us-east-1.amazonaws.com/000000000001/lost"))},
			merrors.ErrScheduledRetryConfig, "WithSchedulerDeadLetter"},
		{"scheduled + dlq", "q.fifo", noop, []router.Option{valid, router.WithDLQ(3)}, merrors.ErrScheduledRetryConfig, "exclusive"},
		{"dlq + scheduled", "q.fifo", noop, []router.Option{router.WithDLQ(3), valid}, merrors.ErrScheduledRetryConfig, "exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := router.New(tt.queue, tt.handler, tt.opts...)
			if !errors.Is(err, tt.want) || r != nil {
				t.Fatalf("New() = %v, %v; want %v", r, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("error %q does not name %q", err, tt.mention)
			}
			// loafer-awsx callers test every bad option with ErrInvalidOption.
			if tt.want == merrors.ErrScheduledRetryConfig && !errors.Is(err, merrors.ErrInvalidOption) {
				t.Fatalf("error %q does not match ErrInvalidOption", err)
			}
		})
	}
}

func TestVisibilityClamp(t *testing.T) {
	t.Parallel()
	r, err := router.New("q", noop, router.WithVisibilityTimeout(3))
	if err != nil || r.VisibilityTimeout() != 11 {
		t.Fatalf("got %v, %v", r, err)
	}
}

func TestScheduledRetryDefaults(t *testing.T) {
	t.Parallel()
	r, err := router.New("q.fifo", noop, router.WithScheduledRetry(
		router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:1:q.fifo", "arn:aws:iam::1:role/r"),
		router.WithScheduledDLQ("https://x/dlq.fifo"), router.WithMaxRetryCount(5)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.ScheduledRetry()
	if cfg == nil || cfg.BaseBackoff != time.Second || cfg.MaxBackoff != router.DefaultScheduledMaxDelay ||
		cfg.MaxRetryCount != 5 || r.RetryModel() != router.ScheduledRetryModel {
		t.Fatalf("cfg %+v", cfg)
	}
}

func TestExpBackoffBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base, max time.Duration
		attempt   int
		want      time.Duration
	}{
		{time.Second, time.Minute, 1, time.Second},
		{time.Second, time.Minute, 0, time.Second},
		{time.Second, time.Minute, 3, 4 * time.Second},
		{time.Second, time.Minute, 7, time.Minute},
		{time.Second, 24 * time.Hour, 64, 24 * time.Hour},
		{time.Second, 24 * time.Hour, math.MaxInt32, 24 * time.Hour},
		{time.Millisecond, 24 * time.Hour, math.MaxInt, 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := router.ExpBackoff(tt.base, tt.max, tt.attempt); got != tt.want {
			t.Errorf("ExpBackoff(%s,%s,%d) = %s want %s", tt.base, tt.max, tt.attempt, got, tt.want)
		}
	}
}

// As in loafer-awsx, nil middleware and empty group fields are ignored.
func TestIgnoredOptionValues(t *testing.T) {
	t.Parallel()
	mw := func(h middleware.Handler) middleware.Handler { return h }
	r, err := router.New("q", noop, router.WithMiddleware(nil, mw, nil), router.WithCustomGroupFields("a", "", " ", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Middlewares()) != 1 || fmt.Sprint(r.CustomGroupFields()) != "[a b]" {
		t.Fatalf("middlewares %d, fields %v", len(r.Middlewares()), r.CustomGroupFields())
	}
}
