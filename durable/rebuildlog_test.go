package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestRebuildLogsOnce: a log line inside an oversized child is logged by the
// live run only, not again by the re-run that rebuilds its result, even when
// the child is the last operation of history (a crash right after it), and
// Replaying reports the re-run as a replay.
func TestRebuildLogsOnce(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		api := &lossyAPI{API: e.API(), lose: func(in *lambda.CheckpointDurableExecutionInput) bool {
			return aws.ToString(in.Updates[0].Name) == "after"
		}}
		var logs bytes.Buffer
		var mu sync.Mutex
		var replaying []bool
		h := newHandlerAPI(t, e, api, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			big, err := durable.RunInChildContext(dc, "big", func(ctx context.Context, c *durable.Context) (string, error) {
				p, err := durable.Step(c, "part", func(context.Context) (string, error) { return strings.Repeat("y", 200*1024), nil })
				if err != nil {
					return "", err
				}
				c.Logger().Info("inside big")
				mu.Lock()
				replaying = append(replaying, c.Replaying())
				mu.Unlock()
				return p + p, nil
			})
			if err != nil {
				return nil, err
			}
			if err := dc.Wait("after", time.Second); err != nil {
				return nil, err
			}
			return len(big), nil
		}, durable.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ctx := context.Background()
		if _, err := e.Drive(ctx, h, 3); !errors.Is(err, durable.ErrCheckpoint) {
			t.Fatalf("lost checkpoint: %v", err)
		}
		out, err := e.Drive(ctx, h, 4)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		if n := strings.Count(logs.String(), "inside big"); n != 1 {
			t.Errorf("logged %d times, want 1:\n%s", n, logs.String())
		}
		if fmt.Sprint(replaying) != "[false true true]" {
			t.Errorf("Replaying in the child over the invocations: %v, want [false true true]", replaying)
		}
	})
}
