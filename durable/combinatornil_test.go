package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestCombinatorTypedNil: a nil *Wait or *Callback, what StartWait and
// CreateCallback return with an error, is refused like a nil Future, with
// ErrInvalidInput, instead of panicking in the handler.
func TestCombinatorTypedNil(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			var msgs []string
			w, werr := dc.StartWait("too-long", 100*365*24*time.Hour)
			if _, err := durable.Race(dc, "wait", w); werr != nil && errors.Is(err, durable.ErrInvalidInput) {
				msgs = append(msgs, "wait")
			}
			cb, cerr := durable.CreateCallback[string](dc, "bad", durable.CallbackOptions{Timeout: -time.Second})
			if err := durable.All(dc, "callback", cb); cerr != nil && errors.Is(err, durable.ErrInvalidInput) {
				msgs = append(msgs, "callback")
			}
			return strings.Join(msgs, ","), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 3)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"wait,callback"` {
			t.Fatalf("%+v %v", out, err)
		}
	})
}
