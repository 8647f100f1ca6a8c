package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestRebuildWithUnsettledFuture: an oversized child that raced two callbacks
// leaves the loser STARTED; rebuilding the child's result in a later
// invocation must accept the unsettled loser, not call it a divergence. Code
// that, rebuilding, waits on the loser the live run did not wait on has
// diverged: the execution fails, it does not end PENDING inside a finished
// context.
func TestRebuildWithUnsettledFuture(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, diverge := range []bool{false, true} {
			e := b.New(t, json.RawMessage(`{}`), nil)
			var ids []string
			var seen []int
			h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				big, err := durable.RunInChildContext(dc, "big", func(ctx context.Context, c *durable.Context) (string, error) {
					cbs, err := callbacks(c, 2, &ids)
					if err != nil {
						return "", err
					}
					i, err := durable.Race(c, "first", futures(cbs)...)
					if err != nil {
						return "", err
					}
					if diverge && len(seen) > 0 {
						if _, err := cbs[1-i].Result(); err != nil {
							return "", err
						}
					}
					return fmt.Sprint(i) + strings.Repeat("x", 300*1024), nil
				})
				if err != nil {
					return nil, err
				}
				seen = append(seen, len(big))
				if err := dc.Wait("after", time.Second); err != nil {
					return nil, err
				}
				return big[:1], nil
			}, durable.Options{})
			ctx := context.Background()
			if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
				t.Fatalf("%+v %v", out, err)
			}
			if err := e.CompleteCallback(ctx, ids[1], `"b"`); err != nil {
				t.Fatal(err)
			}
			out, err := e.Drive(ctx, h, 4)
			if diverge {
				if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != "durable.Nondeterministic" {
					t.Fatalf("diverging rebuild: %+v %v, want FAILED durable.Nondeterministic", out, err)
				}
				continue
			}
			if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"1"` {
				var msg string
				if out.Error != nil {
					msg = aws.ToString(out.Error.ErrorType) + ": " + aws.ToString(out.Error.ErrorMessage)
				}
				t.Fatalf("%s %v %s", out.Status, err, msg)
			}
			if len(seen) != 2 || seen[0] != seen[1] {
				t.Errorf("child results %v", seen)
			}
		}
	})
}
