package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// Replay-aware logging is configurable (spec 10.3): with LogReplays the lines
// logged while replaying are kept, marked durable.replaying; and records carry
// the Lambda request ID of the invocation (10.1).
func TestLogReplaysAndRequestID(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "dropped", true: "kept"}[keep], func(t *testing.T) {
			t.Parallel()
			durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
				e := b.New(t, json.RawMessage(`{}`), nil)
				var logs bytes.Buffer
				fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					dc.Logger().Info("begins")
					if err := dc.Wait("nap", 2*time.Second); err != nil {
						return nil, err
					}
					dc.Logger().Info("after the wait")
					return "ok", nil
				}
				h := newHandler(t, e, fn, durable.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), LogReplays: keep})
				ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-42"})
				out, err := e.Drive(ctx, h, 10)
				if err != nil || out.Status != durable.StatusSucceeded {
					t.Fatalf("Drive = %+v, %v", out, err)
				}
				want := 1
				if keep {
					want = 2 // the first invocation, and the replay after the wait
				}
				if n := strings.Count(logs.String(), "msg=begins"); n != want {
					t.Fatalf("begins logged %d times, want %d:\n%s", n, want, logs.String())
				}
				if keep && !strings.Contains(logs.String(), "durable.replaying=true") {
					t.Fatalf("a replayed line is not marked:\n%s", logs.String())
				}
				for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
					if !strings.Contains(line, "aws.lambda.request_id=req-42") {
						t.Fatalf("line without the request ID: %s", line)
					}
				}
			})
		})
	}
}
