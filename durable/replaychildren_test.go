package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/checkpoint"
	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// batchSucceed returns the SUCCEED update of the batch context sub, the only one.
func batchSucceed(t *testing.T, log *updateLog, sub string) types.OperationUpdate {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	var found []types.OperationUpdate
	for _, u := range log.all {
		if u.Type == types.OperationTypeContext && aws.ToString(u.SubType) == sub && u.Action == types.OperationActionSucceed {
			found = append(found, u)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d SUCCEED updates of a %s context, want 1", len(found), sub)
	}
	return found[0]
}

// childrenInState counts the operations state reports whose parent is id.
func childrenInState(t *testing.T, e durabletest.Execution, id string) int {
	t.Helper()
	n := 0
	for _, op := range e.Operations(t) {
		if aws.ToString(op.ParentId) == id {
			n++
		}
	}
	return n
}

// TestBatchOverPayloadLimitReplaysChildren (4.8.2.4, 4.8.5): a Map whose
// result (40 items of 10 KB) is over the 256 KB operation payload limit
// succeeds; its CONTEXT SUCCEED carries a small marker with
// ContextOptions.ReplayChildren, the service keeps the branches in state, and
// the next invocation (after a wait) rebuilds the same BatchResult from them
// without running a step again. A batch under the limit keeps its result in its
// payload, without ReplayChildren, and its branches leave state.
func TestBatchOverPayloadLimitReplaysChildren(t *testing.T) {
	t.Parallel()
	const items, size = 40, 10 * 1024
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range []struct {
			name   string
			items  int
			size   int
			replay bool
		}{
			{"over the limit", items, size, true},
			{"under the limit", 3, 10, false},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := b.New(t, json.RawMessage(`{}`), nil)
				log := &updateLog{API: e.API(), ops: map[string]string{}}
				runs := make([]atomic.Int32, tt.items)
				var (
					mu      sync.Mutex
					results []string // the BatchResult as each invocation saw it, JSON
				)
				in := make([]int, tt.items)
				for i := range in {
					in[i] = i
				}
				h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					res, err := durable.Map(dc, "items", in, func(ctx context.Context, c *durable.Context, item, i int) (string, error) {
						return durable.Step(c, "make", func(context.Context) (string, error) {
							runs[i].Add(1)
							return fmt.Sprintf("%03d", item) + strings.Repeat(string(rune('a'+item%26)), tt.size), nil
						})
					}, durable.BatchOptions{})
					if err != nil {
						return nil, err
					}
					raw, err := json.Marshal(res)
					if err != nil {
						return nil, err
					}
					mu.Lock()
					results = append(results, string(raw))
					mu.Unlock()
					if err := dc.Wait("after", time.Second); err != nil {
						return nil, err
					}
					// Every operation of history was visited, the rebuilt
					// batch's branches and steps included.
					if dc.Replaying() {
						return nil, errors.New("still replaying after the last operation")
					}
					return res.Succeeded(), nil
				}, durable.Options{})
				out, err := e.Drive(context.Background(), h, 5)
				if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != fmt.Sprint(tt.items) {
					t.Fatal(out, err)
				}
				if len(results) != 2 {
					t.Fatalf("the Map returned in %d invocations, want 2", len(results))
				}
				if results[0] != results[1] {
					t.Errorf("replayed BatchResult differs from the live one (%d vs %d bytes)", len(results[1]), len(results[0]))
				}
				if tt.replay && len(results[0]) <= checkpoint.DefaultMaxBytes {
					t.Fatalf("BatchResult is %d bytes, not over the limit", len(results[0]))
				}
				var res durable.BatchResult[string]
				if err := json.Unmarshal([]byte(results[1]), &res); err != nil {
					t.Fatal(err)
				}
				if res.Total() != tt.items || res.Succeeded() != tt.items || res.CompletionReason != durable.AllCompleted {
					t.Errorf("replayed result: %d items, %d succeeded, %s", res.Total(), res.Succeeded(), res.CompletionReason)
				}
				for i, it := range res.Items {
					if it.Index != i || !strings.HasPrefix(it.Result, fmt.Sprintf("%03d", i)) || len(it.Result) != 3+tt.size {
						t.Errorf("item %d: index %d, result %.10q… (%d bytes)", i, it.Index, it.Result, len(it.Result))
					}
				}
				for i := range runs {
					if n := runs[i].Load(); n != 1 {
						t.Errorf("step of item %d ran %d times", i, n)
					}
				}
				u := batchSucceed(t, log, "Map")
				got := u.ContextOptions != nil && aws.ToBool(u.ContextOptions.ReplayChildren)
				if got != tt.replay {
					t.Errorf("batch SUCCEED ReplayChildren=%v, want %v", got, tt.replay)
				}
				if tt.replay && len(aws.ToString(u.Payload)) > 1024 {
					t.Errorf("batch SUCCEED payload is %d bytes, want a small marker", len(aws.ToString(u.Payload)))
				}
				if !tt.replay && !strings.Contains(aws.ToString(u.Payload), `"Items"`) {
					t.Errorf("batch SUCCEED payload %.80q… does not hold the result", aws.ToString(u.Payload))
				}
				if u.ContextOptions != nil && !tt.replay {
					t.Errorf("batch SUCCEED carries ContextOptions %+v", *u.ContextOptions)
				}
				// The service keeps a finished context's children in state only
				// with ReplayChildren: the branches, not their steps.
				want := 0
				if tt.replay {
					want = tt.items
				}
				if n := childrenInState(t, e, aws.ToString(u.Id)); n != want {
					t.Errorf("%d branches of the finished batch in state, want %d", n, want)
				}
			})
		}
	})
}

// TestBatchReplayChildrenEarlyCompletion: a batch over the payload limit that
// completes early (MinSuccessful) rebuilds, on replay, the branch left
// suspended as ItemStarted and the completion reason, as the live run had them.
func TestBatchReplayChildrenEarlyCompletion(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var (
			mu      sync.Mutex
			results []string
		)
		branches := make([]durable.Branch[string], 4)
		for i := range branches {
			branches[i] = func(ctx context.Context, c *durable.Context) (string, error) {
				if i == 3 {
					return "", c.Wait("never", time.Hour)
				}
				if i == 2 {
					return "", durable.Fatal(errors.New("branch 2 fails"))
				}
				return durable.Step(c, "make", func(context.Context) (string, error) {
					return strings.Repeat("p", 150*1024), nil
				})
			}
		}
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Parallel(dc, "fan", branches, durable.BatchOptions{MinSuccessful: 2, ToleratedFailures: 1})
			if err != nil {
				return nil, err
			}
			raw, _ := json.Marshal(res)
			mu.Lock()
			results = append(results, string(raw))
			mu.Unlock()
			if err := dc.Wait("after", time.Second); err != nil {
				return nil, err
			}
			return res.CompletionReason, nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"`+durable.MinSuccessfulReached+`"` {
			t.Fatal(out, err)
		}
		if len(results) != 2 || results[0] != results[1] {
			t.Fatalf("%d results; replay equal to live: %v", len(results), len(results) == 2 && results[0] == results[1])
		}
		var res durable.BatchResult[string]
		if err := json.Unmarshal([]byte(results[1]), &res); err != nil {
			t.Fatal(err)
		}
		// Branch 2 fails if it started before the policy was met; either way
		// the replay must agree with the live run, checked above.
		if res.Items[3].Status != durable.ItemStarted || res.Succeeded() != 2 || res.CompletionReason != durable.MinSuccessfulReached {
			t.Errorf("replayed items: %s %s %s %s", res.Items[0].Status, res.Items[1].Status, res.Items[2].Status, res.Items[3].Status)
		}
	})
}

// TestChildResultOverPayloadLimit: one branch's (or a RunInChildContext's)
// result over the operation payload limit stays a failure of that context, a
// *durable.ResultTooLargeError matching checkpoint.ErrTooLarge.
func TestChildResultOverPayloadLimit(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var childErr error
		var item durable.BatchItem[string]
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Map(dc, "items", []int{10, 300 * 1024}, func(ctx context.Context, c *durable.Context, n, i int) (string, error) {
				return strings.Repeat("x", n), nil
			}, durable.BatchOptions{ToleratedFailures: -1})
			if err != nil {
				return nil, err
			}
			item = res.Items[1]
			_, childErr = durable.RunInChildContext(dc, "big", func(ctx context.Context, c *durable.Context) (string, error) {
				return strings.Repeat("y", 300*1024), nil
			})
			return res.Failed(), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 3)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != "1" {
			t.Fatal(out, err)
		}
		if item.Status != durable.ItemFailed || item.Error == nil || item.Error.Type != "*durable.ResultTooLargeError" {
			t.Errorf("oversized branch: %s %+v", item.Status, item.Error)
		}
		var tl *durable.ResultTooLargeError
		if !errors.As(childErr, &tl) || !errors.Is(childErr, checkpoint.ErrTooLarge) || tl.Name != "big" || tl.Limit != checkpoint.DefaultMaxBytes || tl.Size <= tl.Limit {
			t.Errorf("oversized child context: %v", childErr)
		}
	})
}
