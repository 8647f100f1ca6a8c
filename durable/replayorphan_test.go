package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestReplayingAfterEarlyBatch: a batch that completed early leaves a
// suspended branch STARTED below it. State drops the branch (its parent
// finished) but, by the checkpoint server's own rule, which the fake
// follows, not the branch's operations (their parent did not finish): they
// come without their parent. No replay reaches them, so they must not keep
// the execution replaying: the lines logged after the batch appear once,
// and Replaying ends at the last operation of history.
func TestReplayingAfterEarlyBatch(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var logs bytes.Buffer
		var replaying []bool
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Parallel(dc, "p", []durable.Branch[string]{
				func(ctx context.Context, c *durable.Context) (string, error) { return "fast", nil },
				func(ctx context.Context, c *durable.Context) (string, error) {
					cb, err := durable.CreateCallback[string](c, "cb", durable.CallbackOptions{Timeout: time.Hour})
					if err != nil {
						return "", err
					}
					return cb.Result()
				},
			}, durable.BatchOptions{MinSuccessful: 1})
			if err != nil {
				return nil, err
			}
			if err := dc.Wait("nap", time.Second); err != nil {
				return nil, err
			}
			dc.Logger().Info("after the nap")
			replaying = append(replaying, dc.Replaying())
			if err := dc.Wait("nap-2", time.Second); err != nil {
				return nil, err
			}
			return res.CompletionReason, nil
		}, durable.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"`+durable.MinSuccessfulReached+`"` {
			t.Fatalf("%+v %v", out, err)
		}
		if n := strings.Count(logs.String(), "after the nap"); n != 1 {
			t.Errorf("logged %d times, want 1", n)
		}
		if len(replaying) != 2 || replaying[0] || !replaying[1] {
			t.Errorf("Replaying after the nap, over the invocations: %v, want [false true]", replaying)
		}
	})
}
