package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestLargeCallbackFailure: a callback failure larger than the 32 KB the
// service allows an update's error object (the answering system sent it,
// and SendDurableExecutionCallbackFailure accepted it) reaches the function,
// which handles it: the WaitForCallback context's FAIL records its beginning
// instead of being refused, which failed the execution with
// CheckpointRejected. Replays return the recorded, shortened failure.
func TestLargeCallbackFailure(t *testing.T) {
	t.Parallel()
	const size = 40000
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var id string
		var seen []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, err := durable.WaitForCallback[string](dc, "approve", time.Hour, func(_ context.Context, cb string) error { id = cb; return nil })
			var oe *durable.OperationError
			if !errors.As(err, &oe) {
				return nil, fmt.Errorf("want an *OperationError, got %v", err)
			}
			seen = append(seen, fmt.Sprintf("%s %d %s", oe.Type, len(oe.Message), oe.Message[:3]))
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := e.FailCallback(ctx, id, strings.Repeat("e", size)); err != nil {
			t.Fatal(err)
		}
		out, err := e.Drive(ctx, h, 4)
		if err != nil || out.Status != durable.StatusSucceeded {
			var msg string
			if out.Error != nil {
				msg = aws.ToString(out.Error.ErrorType) + " " + aws.ToString(out.Error.ErrorMessage)
			}
			t.Fatalf("%s %v %.200s", out.Status, err, msg)
		}
		// Live and replayed alike, the failure is the WaitForCallback context's,
		// as checkpointed: shortened to fit.
		if len(seen) != 2 || seen[0] != seen[1] || seen[0] == fmt.Sprintf("CallbackExternalError %d eee", size) || !strings.HasPrefix(seen[1], "CallbackExternalError ") || !strings.HasSuffix(seen[1], " eee") {
			t.Errorf("live and replayed failures: %q", seen)
		}
	})
}
