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
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestCombinatorsInBranches (7.3): combinators inside Map branches, in
// goroutines: All over callbacks each branch started, answered one per
// invocation across six invocations, then a Race of a future from the root
// against one of the branch's own; the execution stays PENDING until the
// last answer and every branch returns the root's callback as the winner.
func TestCombinatorsInBranches(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var mu sync.Mutex
		ids := map[string]string{}
		var rootIDs []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			root, err := callbacks(dc, 1, &rootIDs)
			if err != nil {
				return nil, err
			}
			res, err := durable.Map(dc, "m", []int{0, 1, 2}, func(ctx context.Context, c *durable.Context, n, i int) (string, error) {
				var local []string
				cbs, err := callbacks(c, 2, &local)
				if err != nil {
					return "", err
				}
				mu.Lock()
				for k, id := range local {
					ids[fmt.Sprintf("%d-%d", i, k)] = id
				}
				mu.Unlock()
				if err := durable.All(c, "all", futures(cbs)...); err != nil {
					return "", err
				}
				j, err := durable.Race(c, "race", root[0], cbs[0])
				if err != nil {
					return "", err
				}
				return fmt.Sprint(j), nil
			}, durable.BatchOptions{})
			if err != nil {
				return nil, err
			}
			return res.Results(), nil
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		for i := range 3 {
			for k := range 2 {
				mu.Lock()
				id := ids[fmt.Sprintf("%d-%d", i, k)]
				mu.Unlock()
				if err := e.CompleteCallback(ctx, id, `"x"`); err != nil {
					t.Fatal(err)
				}
				out, err := e.Drive(ctx, h, 3)
				if err != nil {
					t.Fatal(err)
				}
				if out.Status != durable.StatusPending && !(i == 2 && k == 1) {
					t.Fatalf("after %d-%d: %+v", i, k, out)
				}
				if i == 2 && k == 1 && (out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `["1","1","1"]`) {
					t.Fatalf("end: %s %s", out.Status, aws.ToString(out.Result))
				}
			}
		}
	})
}

// TestEarlyBatchLeavesRaceSuspended: a batch that completes early while a
// branch is suspended in a Race of a callback and a wait succeeds with the
// branch ItemStarted, cancels the wait, and the execution goes on and stops
// replaying at its last historic operation.
func TestEarlyBatchLeavesRaceSuspended(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Parallel(dc, "p", []durable.Branch[string]{
				func(ctx context.Context, c *durable.Context) (string, error) {
					return durable.Step(c, "s", func(context.Context) (string, error) { return "ok", nil })
				},
				func(ctx context.Context, c *durable.Context) (string, error) {
					cb, err := durable.CreateCallback[string](c, "cb", durable.CallbackOptions{Timeout: time.Hour})
					if err != nil {
						return "", err
					}
					w, err := c.StartWait("deadline", time.Hour)
					if err != nil {
						return "", err
					}
					i, err := durable.Race(c, "race", cb, w)
					return fmt.Sprint(i), err
				},
			}, durable.BatchOptions{MinSuccessful: 1})
			if err != nil {
				return nil, err
			}
			if err := dc.Wait("after", time.Second); err != nil {
				return nil, err
			}
			return fmt.Sprintf("%d %s %s %v", res.Succeeded(), itemAt(res, 1).Status, res.CompletionReason, dc.Replaying()), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"1 STARTED MIN_SUCCESSFUL_REACHED false"` {
			t.Fatalf("%s %v %s %+v", out.Status, err, aws.ToString(out.Result), out.Error)
		}
		for _, op := range e.Operations(t) {
			if op.Type == types.OperationTypeWait && aws.ToString(op.Name) == "deadline" && op.Status != types.OperationStatusCancelled {
				t.Errorf("deadline %s", op.Status)
			}
		}
	})
}

// TestCombinatorLostCheckpoint: a Race whose START or SUCCEED checkpoint is
// lost (the invocation fails and Lambda retries it) is decided again in the
// retry; with the SUCCEED lost, the decision is taken over the state of the
// retry, which here still makes the earlier answer the winner.
func TestCombinatorLostCheckpoint(t *testing.T) {
	t.Parallel()
	for _, action := range []types.OperationAction{types.OperationActionStart, types.OperationActionSucceed} {
		t.Run(string(action), func(t *testing.T) {
			t.Parallel()
			durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
				e := b.New(t, json.RawMessage(`{}`), nil)
				api := &lossyAPI{API: e.API(), lose: func(in *lambda.CheckpointDurableExecutionInput) bool {
					return aws.ToString(in.Updates[0].Name) == "first" && in.Updates[0].Action == action
				}}
				var ids []string
				var decided []int
				h := newHandlerAPI(t, e, api, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					cbs, err := callbacks(dc, 2, &ids)
					if err != nil {
						return nil, err
					}
					i, err := durable.Race(dc, "first", futures(cbs)...)
					if err != nil {
						return nil, err
					}
					decided = append(decided, i)
					if err := dc.Wait("after", time.Second); err != nil {
						return nil, err
					}
					return i, nil
				}, durable.Options{})
				ctx := context.Background()
				out, err := e.Drive(ctx, h, 3)
				if action == types.OperationActionStart {
					if !errors.Is(err, durable.ErrCheckpoint) {
						t.Fatalf("%+v %v", out, err)
					}
					out, err = e.Drive(ctx, h, 3)
				}
				if err != nil || out.Status != durable.StatusPending {
					t.Fatalf("%+v %v", out, err)
				}
				if err := e.CompleteCallback(ctx, ids[1], `"b"`); err != nil {
					t.Fatal(err)
				}
				out, err = e.Drive(ctx, h, 3)
				if action == types.OperationActionSucceed {
					if !errors.Is(err, durable.ErrCheckpoint) {
						t.Fatalf("%+v %v", out, err)
					}
					e.Elapse(1100 * time.Millisecond)
					if err := e.CompleteCallback(ctx, ids[0], `"a"`); err != nil {
						t.Fatal(err)
					}
					out, err = e.Drive(ctx, h, 3)
				}
				if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != "1" {
					t.Fatalf("%s %v %s", out.Status, err, aws.ToString(out.Result))
				}
			})
		})
	}
}

// TestNestedRebuild (4.8.5): an oversized child holding an oversized child, a
// Parallel that completed early (its slow branch's wait cancelled), a wait, a
// WaitForCallback and an oversized Map whose branches are oversized children
// rebuilds, after the next wait, the same result without running a step
// again; every line it logs appears once, and Replaying ends after the last
// historic operation.
func TestNestedRebuild(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var runs atomic.Int32
		var views []string
		var logs bytes.Buffer
		var ids []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			dc.Logger().Info("root begins")
			outer, err := durable.RunInChildContext(dc, "outer", func(ctx context.Context, c *durable.Context) (string, error) {
				inner, err := durable.RunInChildContext(c, "inner", func(ctx context.Context, c2 *durable.Context) (string, error) {
					c2.Logger().Info("inner")
					return durable.Step(c2, "part", func(context.Context) (string, error) {
						runs.Add(1)
						return strings.Repeat("i", 200*1024), nil
					})
				})
				if err != nil {
					return "", err
				}
				// A Parallel that completes early, a wait, a callback.
				res, err := durable.Parallel(c, "p", []durable.Branch[string]{
					func(ctx context.Context, c3 *durable.Context) (string, error) { return "fast", nil },
					func(ctx context.Context, c3 *durable.Context) (string, error) {
						return "", c3.Wait("slow", time.Hour)
					},
				}, durable.BatchOptions{MinSuccessful: 1})
				if err != nil {
					return "", err
				}
				if err := c.Wait("nap", time.Second); err != nil {
					return "", err
				}
				v, err := durable.WaitForCallback[string](c, "cb", time.Hour, func(_ context.Context, id string) error { ids = append(ids, id); return nil })
				if err != nil {
					return "", err
				}
				c.Logger().Info("outer ends")
				big, err := durable.Map(c, "bigmap", []int{0, 1}, func(ctx context.Context, c4 *durable.Context, n, i int) (string, error) {
					return durable.RunInChildContext(c4, "bigbranch", func(ctx context.Context, c5 *durable.Context) (string, error) {
						s, err := durable.Step(c5, "s", func(context.Context) (string, error) {
							runs.Add(1)
							return strings.Repeat("b", 100*1024), nil
						})
						return s + s + s, err
					})
				}, durable.BatchOptions{})
				if err != nil {
					return "", err
				}
				return inner + inner + v + res.CompletionReason + fmt.Sprint(len(big.Results()[0]), len(big.Results()[1])), nil
			})
			if err != nil {
				return nil, err
			}
			views = append(views, fmt.Sprint(len(outer), outer[len(outer)-40:]))
			if err := dc.Wait("after", time.Second); err != nil {
				return nil, err
			}
			if dc.Replaying() {
				return nil, errors.New("still replaying")
			}
			return len(outer), nil
		}, durable.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 5); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := e.CompleteCallback(ctx, ids[0], `"V"`); err != nil {
			t.Fatal(err)
		}
		out, err := e.Drive(ctx, h, 5)
		if err != nil || out.Status != durable.StatusSucceeded {
			var msg string
			if out.Error != nil {
				msg = aws.ToString(out.Error.ErrorMessage)
			}
			t.Fatalf("%s %v %s", out.Status, err, msg)
		}
		if len(views) != 2 || views[0] != views[1] {
			t.Errorf("views %v", views)
		}
		if n := runs.Load(); n != 3 {
			t.Errorf("steps ran %d times", n)
		}
		for _, l := range []string{"root begins", "msg=inner", "outer ends"} {
			if n := strings.Count(logs.String(), l); n != 1 {
				t.Errorf("%q logged %d times:\n%s", l, n, logs.String())
			}
		}
	})
}

// TestConcurrentRebuild: Map branches, in goroutines, each rebuild an
// oversized child in every invocation while the batch is still running
// (each branch then waits a different number of times); under -race, and
// no step runs twice.
func TestConcurrentRebuild(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var runs atomic.Int32
		var mu sync.Mutex
		var seen []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Map(dc, "m", []int{0, 1, 2, 3}, func(ctx context.Context, c *durable.Context, n, i int) (int, error) {
				big, err := durable.RunInChildContext(c, "big", func(ctx context.Context, c2 *durable.Context) (string, error) {
					s, err := durable.Step(c2, "s", func(context.Context) (string, error) {
						runs.Add(1)
						return strings.Repeat("c", 150*1024), nil
					})
					return s + s, err
				})
				if err != nil {
					return 0, err
				}
				for k := range i + 1 {
					if err := c.Wait(fmt.Sprint("w", k), time.Second); err != nil {
						return 0, err
					}
				}
				mu.Lock()
				seen = append(seen, fmt.Sprint(i, len(big)))
				mu.Unlock()
				return len(big), nil
			}, durable.BatchOptions{})
			if err != nil {
				return nil, err
			}
			return res.Results(), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		if n := runs.Load(); n != 4 {
			t.Errorf("steps ran %d times", n)
		}
	})
}

// TestWaitForCallbackSubmitterFailsEveryAttempt (7.2.2): a submitter that
// fails every attempt fails the WaitForCallback context after
// Submit.MaxAttempts attempts; live the error is submit's own, replayed it is
// the recorded failure, with submit's message, and submit does not run again.
func TestWaitForCallbackSubmitterFailsEveryAttempt(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var seen []string
		submits := 0
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, err := durable.WaitForCallbackWith[string](dc, "approve", durable.CallbackOptions{Timeout: time.Hour, Submit: durable.StepOptions{MaxAttempts: 2}},
				func(_ context.Context, cb string) error { submits++; return errors.New("mail down") })
			seen = append(seen, fmt.Sprint(err))
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 6)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		// The submitter's failure, a StepError, fails the WaitForCallback
		// context: live and replayed alike (ErrorType CallbackSubmitterError).
		want := "durable: operation c4ca4238a0b92382 (approve) failed: StepError: mail down|durable: operation c4ca4238a0b92382 (approve) failed: StepError: mail down"
		if submits != 2 || strings.Join(seen, "|") != want {
			t.Errorf("submit ran %d times; errors %q, want %q", submits, seen, want)
		}
		if got := statuses(t, e); got != "approve=CONTEXT:FAILED after=WAIT:SUCCEEDED" {
			t.Errorf("history: %s", got)
		}
	})
}

// TestWaitForCallbackEarlierLayoutRenamed: an execution of the earlier layout
// whose CALLBACK has another name than the WaitForCallback now asking for it
// is not taken for the earlier layout: it diverged, and fails as
// nondeterministic naming what history holds.
func TestWaitForCallbackEarlierLayoutRenamed(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		old := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			cb, err := durable.CreateCallback[string](dc, "approve-v1", durable.CallbackOptions{Timeout: time.Hour})
			if err != nil {
				return nil, err
			}
			return cb.Result()
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, old, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.WaitForCallback[string](dc, "approve", time.Hour, func(context.Context, string) error { return nil })
		}, durable.Options{})
		out, err := e.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != "durable.Nondeterministic" ||
			!strings.Contains(aws.ToString(out.Error.ErrorMessage), `is CALLBACK/Callback "approve-v1" in history, code asks for CONTEXT/WaitForCallback "approve"`) {
			t.Fatalf("%+v %v, want FAILED durable.Nondeterministic naming both", out, err)
		}
	})
}
