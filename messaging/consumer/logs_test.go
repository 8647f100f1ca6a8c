package consumer_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/fake"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// undeletable is the in-memory SQS whose deletes always fail.
type undeletable struct{ *messagingtest.SQS }

func (undeletable) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return nil, errors.New("delete unavailable")
}

// The consumer's records carry loafer-awsx's messages and the attributes its
// users query by (queue_url, receipt_handle, group_id), so log searches and
// alerts written for loafer-awsx keep matching.
func TestLogRecordsMatchLoafer(t *testing.T) {
	t.Parallel()
	failing := func(context.Context, middleware.Message) error { return errors.New("boom") }
	scheduled := func(sched *messagingtest.Scheduler, arn, dlqURL string, maxRetries int) []router.Option {
		return []router.Option{router.WithRunMode(router.PerGroupID), router.WithScheduledRetry(
			router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/sched"),
			router.WithScheduledDLQ(dlqURL), router.WithMaxRetryCount(maxRetries),
			router.WithBackoff(time.Second, time.Minute))}
	}
	for _, tc := range []struct {
		name  string
		queue string
		// setup sends the messages and returns the client, the route's
		// options and the consumer's extra options.
		setup func(t *testing.T, fake *messagingtest.SQS, url, arn string) (consumer.SQSClient, []router.Option, []consumer.Option)
		ok    bool // the handler succeeds instead of failing
		level slog.Level
		msg   string
		attrs []string // attributes the record must carry, non-empty
		group string   // group_id the record must carry, when set
		match error    // the record's error must match, when set
	}{
		{
			name: "handler error", queue: "logs-handler",
			setup: func(t *testing.T, f *messagingtest.SQS, url, _ string) (consumer.SQSClient, []router.Option, []consumer.Option) {
				sendN(t, f, url, 1, nil)
				return f, nil, nil
			},
			level: slog.LevelError, msg: "handler returned an error", attrs: []string{"queue_url", "receipt_handle", "error"},
		},
		{
			name: "FIFO hold", queue: "logs-hold.fifo",
			setup: func(t *testing.T, f *messagingtest.SQS, url, _ string) (consumer.SQSClient, []router.Option, []consumer.Option) {
				sendN(t, f, url, 2, func(int) string { return "g1" })
				return f, []router.Option{router.WithRunMode(router.PerGroupID)}, nil
			},
			level: slog.LevelWarn, msg: "holding message to preserve FIFO group order; earlier message in group failed",
			attrs: []string{"queue_url", "receipt_handle"}, group: "g1",
		},
		{
			name: "exhausted", queue: "logs-exhausted",
			setup: func(t *testing.T, f *messagingtest.SQS, url, _ string) (consumer.SQSClient, []router.Option, []consumer.Option) {
				sendN(t, f, url, 1, nil)
				return f, []router.Option{router.WithDLQ(1)}, nil
			},
			level: slog.LevelError, msg: "message exhausted; left in source queue for AWS SQS redrive",
			attrs: []string{"queue_name", "message_id", "receive_count"},
		},
		{
			name: "delete failure", queue: "logs-delete",
			setup: func(t *testing.T, f *messagingtest.SQS, url, _ string) (consumer.SQSClient, []router.Option, []consumer.Option) {
				sendN(t, f, url, 1, nil)
				return undeletable{f}, nil, nil
			},
			ok:    true,
			level: slog.LevelError, msg: "failed to delete message", attrs: []string{"queue_url", "receipt_handle", "error"},
		},
		{
			name: "retry schedule refused", queue: "logs-schedule.fifo",
			setup: func(t *testing.T, f *messagingtest.SQS, url, arn string) (consumer.SQSClient, []router.Option, []consumer.Option) {
				sendN(t, f, url, 1, func(int) string { return "g2" })
				dlq, _ := f.AddQueue("logs-schedule-dlq.fifo")
				sched := messagingtest.NewScheduler(f)
				sched.Err = errors.New("scheduler unavailable")
				return f, scheduled(sched, arn, dlq, 3), []consumer.Option{consumer.WithSchedulerClient(sched)}
			},
			level: slog.LevelError, msg: "failed to create retry schedule; retaining message",
			attrs: []string{"queue_url", "receipt_handle", "retry_count", "error"}, group: "g2", match: merrors.ErrRetryScheduleCreate,
		},
		{
			name: "DLQ publish refused", queue: "logs-dlq.fifo",
			setup: func(t *testing.T, f *messagingtest.SQS, url, arn string) (consumer.SQSClient, []router.Option, []consumer.Option) {
				if _, err := f.Send(url, "exhausted", "g3", map[string]string{consumer.RetryCountAttribute: "1"}); err != nil {
					t.Fatal(err)
				}
				sched := messagingtest.NewScheduler(f)
				const missing = "https://sqs.us-east-1.amazonaws.com/000000000000/no-such-dlq.fifo"
				return f, scheduled(sched, arn, missing, 1), []consumer.Option{consumer.WithSchedulerClient(sched)}
			},
			level: slog.LevelError, msg: "failed to publish message to DLQ; retaining message",
			attrs: []string{"queue_url", "receipt_handle", "retry_count", "error"}, group: "g3", match: merrors.ErrDLQPublish,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := messagingtest.NewSQS()
			url, arn := f.AddQueue(tc.queue)
			client, ropts, copts := tc.setup(t, f, url, arn)
			logs := fake.NewLogHandler()
			h := failing
			if tc.ok {
				h = func(context.Context, middleware.Message) error { return nil }
			}
			c, err := consumer.New(client, newRoute(t, tc.queue, h, ropts...), append(copts, consumer.WithLogger(slog.New(logs)))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- c.Run(ctx) }()
			var rec *fake.LogRecord
			waitFor(t, func() bool {
				for _, r := range logs.Records() {
					if r.Message == tc.msg {
						rec = &r
						return true
					}
				}
				return false
			})
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if rec.Level != tc.level {
				t.Errorf("%q at %v, want %v", rec.Message, rec.Level, tc.level)
			}
			for _, k := range tc.attrs {
				if v, ok := rec.Attrs[k]; !ok || v == "" || v == nil {
					t.Errorf("%q has %s = %v, want it set: %v", rec.Message, k, v, rec.Attrs)
				}
			}
			if tc.group != "" && rec.Attrs["group_id"] != tc.group {
				t.Errorf("%q has group_id %v, want %s", rec.Message, rec.Attrs["group_id"], tc.group)
			}
			if tc.match != nil {
				if err, _ := rec.Attrs["error"].(error); !errors.Is(err, tc.match) {
					t.Errorf("%q has error %v, want it to match %v", rec.Message, rec.Attrs["error"], tc.match)
				}
			}
		})
	}
}
