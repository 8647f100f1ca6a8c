package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestWaitForCallbackSubmitOptions: invalid callback options (a negative
// submit MaxAttempts, a negative timeout) are refused before anything is
// recorded, with the same error on every invocation; before, the first was
// found by the submitter step after the callback was created, failing the
// context with an error a replay no longer matched to ErrInvalidInput, and a
// negative timeout left the callback STARTED on the fake and TIMED_OUT at once
// on the checkpoint server.
func TestWaitForCallbackSubmitOptions(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		opts   durable.CallbackOptions
		create bool // CreateCallback instead of WaitForCallbackWith
	}{
		{"negative submit attempts", durable.CallbackOptions{Timeout: time.Hour, Submit: durable.StepOptions{MaxAttempts: -1}}, false},
		{"negative timeout", durable.CallbackOptions{Timeout: -time.Second}, false},
		{"negative heartbeat", durable.CallbackOptions{HeartbeatTimeout: -time.Second}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
				e := b.New(t, json.RawMessage(`{}`), nil)
				var got []bool
				submits := 0
				h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					var err error
					if tt.create {
						_, err = durable.CreateCallback[string](dc, "approve", tt.opts)
					} else {
						_, err = durable.WaitForCallbackWith[string](dc, "approve", tt.opts, func(context.Context, string) error { submits++; return nil })
					}
					got = append(got, errors.Is(err, durable.ErrInvalidInput))
					return nil, dc.Wait("after", time.Second)
				}, durable.Options{})
				out, err := e.Drive(context.Background(), h, 4)
				if err != nil || out.Status != durable.StatusSucceeded {
					t.Fatalf("%+v %v", out, err)
				}
				if fmt.Sprint(got) != "[true true]" || submits != 0 {
					t.Errorf("ErrInvalidInput over the invocations: %v, submit ran %d times", got, submits)
				}
				if s := statuses(t, e); s != "after=WAIT:SUCCEEDED" {
					t.Errorf("history: %s", s)
				}
			})
		})
	}
}
