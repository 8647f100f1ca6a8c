package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestWaitForCallbackErrorFields: the failure of WaitForCallback's callback
// names the same operation live and on replay.
func TestWaitForCallbackErrorFields(t *testing.T) {
	t.Parallel()
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
			c := *oe
			c.Cause = nil // the live error's cause; the recorded fields are what must match
			seen = append(seen, fmt.Sprintf("%+v", c))
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := e.FailCallback(ctx, id, "declined"); err != nil {
			t.Fatal(err)
		}
		if out, err := e.Drive(ctx, h, 4); err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		if len(seen) != 2 || seen[0] != seen[1] {
			t.Errorf("live and replayed errors:\n%s", strings.Join(seen, "\n"))
		}
	})
}
