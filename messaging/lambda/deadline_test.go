package lambda_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Records still running when the invocation nears its deadline are reported
// as failures and Handle returns before the deadline, so Lambda deletes the
// records that finished instead of retrying the whole batch. Handlers see
// the end through their context, with cause ErrDeadline; one that ignores it
// no longer changes the answer when it finishes late.
func TestDeadlineReportsUnfinished(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, queue string
		bodies      []string // record i is "<queue>-i"; body selects the behaviour
		groups      []string
		wantFail    []int
		runs        int // handlers that start
	}{
		// "hang" ignores its context, "wait" returns when it ends.
		{name: "standard", queue: "std-deadline", bodies: []string{"ok", "hang", "wait", "ok"},
			wantFail: []int{1, 2}, runs: 4},
		// The waiting record fails, the rest of its group is not run, and
		// the next group is not started once the deadline passed.
		{name: "fifo", queue: "fifo-deadline.fifo", bodies: []string{"ok", "wait", "ok", "ok"},
			groups: []string{"g1", "g1", "g1", "g2"}, wantFail: []int{1, 2, 3}, runs: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			finished := make(chan struct{}, len(tc.bodies))
			var mu sync.Mutex
			var causes []error
			r, err := router.New(tc.queue, func(ctx context.Context, m middleware.Message) error {
				defer func() { finished <- struct{}{} }()
				switch string(m.Body()) {
				case "hang":
					select {
					case <-release:
					case <-time.After(30 * time.Second): // only if Handle never returned
					}
				case "wait":
					<-ctx.Done()
					mu.Lock()
					causes = append(causes, context.Cause(ctx))
					mu.Unlock()
					return ctx.Err()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			h, err := lambda.New([]*router.Route{r}, lambda.WithDeadlineMargin(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var recs []events.SQSMessage
			for i, b := range tc.bodies {
				g := ""
				if tc.groups != nil {
					g = tc.groups[i]
				}
				recs = append(recs, rec(tc.queue, tc.queue+"-"+string(rune('0'+i)), b, g))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			resp := handle(t, h, ctx, recs...)
			returnedInTime := ctx.Err() == nil
			close(release)
			for range tc.runs {
				<-finished
			}
			var want []string
			for _, i := range tc.wantFail {
				want = append(want, tc.queue+"-"+string(rune('0'+i)))
			}
			if got := failures(resp); !slices.Equal(got, want) {
				t.Fatalf("failures %v, want %v", got, want)
			}
			if !returnedInTime {
				t.Fatal("Handle returned after the invocation deadline")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(causes) != 1 || !errors.Is(causes[0], lambda.ErrDeadline) {
				t.Fatalf("handler context causes %v, want [ErrDeadline]", causes)
			}
		})
	}
}

// Without a deadline (a test harness, a direct call) nothing is cut short.
func TestNoDeadline(t *testing.T) {
	t.Parallel()
	r, _ := router.New("nodl", func(ctx context.Context, _ middleware.Message) error { return ctx.Err() })
	h, err := lambda.New([]*router.Route{r})
	if err != nil {
		t.Fatal(err)
	}
	if resp := handle(t, h, context.Background(), rec("nodl", "n1", "", "")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", failures(resp))
	}
}

func TestDeadlineMarginValidation(t *testing.T) {
	t.Parallel()
	r, _ := router.New("q", func(context.Context, middleware.Message) error { return nil })
	for _, d := range []time.Duration{-time.Millisecond, lambda.MaxDeadlineMargin + time.Second} {
		if _, err := lambda.New([]*router.Route{r}, lambda.WithDeadlineMargin(d)); !errors.Is(err, merrors.ErrInvalidOption) {
			t.Fatalf("margin %s: %v, want ErrInvalidOption", d, err)
		}
	}
	for _, d := range []time.Duration{0, lambda.DefaultDeadlineMargin, lambda.MaxDeadlineMargin} {
		if _, err := lambda.New([]*router.Route{r}, lambda.WithDeadlineMargin(d)); err != nil {
			t.Fatalf("margin %s: %v", d, err)
		}
	}
}

// A margin that leaves no time runs no record: every one is reported as a
// failure at once, rather than started on a context that has already ended.
func TestDeadlineMarginLeavesNoTime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	ran := 0
	std, _ := router.New("notime", func(context.Context, middleware.Message) error {
		mu.Lock()
		ran++
		mu.Unlock()
		return nil
	})
	fifo, _ := router.New("notime.fifo", func(context.Context, middleware.Message) error {
		mu.Lock()
		ran++
		mu.Unlock()
		return nil
	})
	h, err := lambda.New([]*router.Route{std, fifo}, lambda.WithDeadlineMargin(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []events.SQSMessage
	for i := range 20 {
		recs = append(recs, rec("notime", "s"+string(rune('a'+i)), "", ""), rec("notime.fifo", "f"+string(rune('a'+i)), "", "g"))
	}
	resp := handle(t, h, ctx, recs...)
	if len(resp.BatchItemFailures) != len(recs) {
		t.Fatalf("%d failures, want all %d", len(resp.BatchItemFailures), len(recs))
	}
	mu.Lock()
	defer mu.Unlock()
	if ran != 0 {
		t.Fatalf("%d records ran on an ended context", ran)
	}
}
