package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A handler that outlives its message's visibility extensions is canceled,
// with cause ErrVisibilityLapsed and an Error log, a third of the timeout
// before SQS redelivers the message, so the redelivery does not run beside
// it. Its failure then changes nothing on the stale delivery, and only the
// redelivery's run deletes the message.
func TestHandlerCanceledWhenVisibilityLapses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		limit int
		fifo  bool
	}{
		{name: "no extensions", limit: 0},
		{name: "two extensions", limit: 2},
		{name: "fifo", limit: 1, fifo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			fake := messagingtest.NewSQS()
			fake.SetNow(clk.Now)
			queue := fmt.Sprintf("lapse-cancel-%d", tc.limit)
			var group func(int) string
			if tc.fifo {
				queue += ".fifo"
				group = func(int) string { return "g" }
			}
			url, _ := fake.AddQueue(queue)
			sendN(t, fake, url, 1, group)
			var mu sync.Mutex
			var runs []string
			var causes []error
			r := newRoute(t, queue, func(ctx context.Context, m middleware.Message) error {
				mu.Lock()
				first := len(runs) == 0
				runs = append(runs, fmt.Sprint(middleware.ReceiveCount(m)))
				mu.Unlock()
				if !first {
					return nil
				}
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Second): // never canceled: fail below
				}
				mu.Lock()
				causes = append(causes, context.Cause(ctx))
				mu.Unlock()
				return ctx.Err()
			}, router.WithExtensionLimit(tc.limit))
			var logs lockedBuffer
			c, err := consumer.New(fake, r, consumer.WithClock(clk),
				consumer.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- c.Run(ctx) }()
			waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == 1 && clk.Tickers() > 0 })
			// Due 20 s after receipt (a third of the 30 s timeout left), then
			// every 20 s after each extension.
			for i := range tc.limit {
				before := fake.Calls("ChangeMessageVisibilityBatch")
				clk.Advance(map[bool]time.Duration{true: 21 * time.Second, false: 20 * time.Second}[i == 0])
				waitFor(t, func() bool { return fake.Calls("ChangeMessageVisibilityBatch") > before })
			}
			extensions := fake.Calls("ChangeMessageVisibilityBatch")
			clk.Advance(map[bool]time.Duration{true: 21 * time.Second, false: 20 * time.Second}[tc.limit == 0])
			waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(causes) == 1 })
			mu.Lock()
			cause := causes[0]
			mu.Unlock()
			if !errors.Is(cause, consumer.ErrVisibilityLapsed) {
				t.Fatalf("handler context cause %v, want ErrVisibilityLapsed", cause)
			}
			if out := logs.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "visibility can no longer be extended") {
				t.Fatalf("no Error log for the canceled handler:\n%s", out)
			}
			// The visibility ends; the redelivery runs and deletes it.
			clk.Advance(11 * time.Second)
			waitFor(t, func() bool { return fake.Len(url) == 0 })
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if n := fake.Calls("ChangeMessageVisibilityBatch"); n != extensions {
				t.Fatalf("%d visibility changes after the lapse: the stale delivery's failure acted on the message", n-extensions)
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(runs) != "[1 2]" {
				t.Fatalf("runs (receive counts) %v, want [1 2]", runs)
			}
		})
	}
}
