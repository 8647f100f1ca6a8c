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
				for i, it := range res.All {
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
				if !tt.replay && !strings.Contains(aws.ToString(u.Payload), `{"all":[`) {
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
		if itemAt(res, 3).Status != durable.ItemStarted || res.Succeeded() != 2 || res.CompletionReason != durable.MinSuccessfulReached {
			t.Errorf("replayed items: %s %s %s %s", itemAt(res, 0).Status, itemAt(res, 1).Status, itemAt(res, 2).Status, itemAt(res, 3).Status)
		}
	})
}

// contextSucceed returns the SUCCEED update of the context named name.
func contextSucceed(t *testing.T, log *updateLog, name string) types.OperationUpdate {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, u := range log.all {
		if u.Type == types.OperationTypeContext && aws.ToString(u.Name) == name && u.Action == types.OperationActionSucceed {
			return u
		}
	}
	t.Fatalf("no SUCCEED update of context %q", name)
	return types.OperationUpdate{}
}

// TestChildResultOverPayloadLimit (4.8.5): a RunInChildContext result, and one
// Map branch's result, over the operation payload limit succeed. Their CONTEXT
// SUCCEED carries an empty payload with ReplayChildren, as the official SDKs
// checkpoint it; the service keeps their children, and the next invocation
// rebuilds the same results by running the child functions again over them,
// without running a step body again.
func TestChildResultOverPayloadLimit(t *testing.T) {
	t.Parallel()
	const part = 200 * 1024 // two parts: over the limit, each under it
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		log := &updateLog{API: e.API(), ops: map[string]string{}}
		var stepRuns atomic.Int32
		type seen struct{ Child, Item0, Item1 string }
		var views []seen
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Map(dc, "items", []int{10, 2 * part}, func(ctx context.Context, c *durable.Context, n, i int) (string, error) {
				half, err := durable.Step(c, "make", func(context.Context) (string, error) {
					stepRuns.Add(1)
					return strings.Repeat(string(rune('a'+i)), n/2), nil
				})
				return half + half, err
			}, durable.BatchOptions{})
			if err != nil {
				return nil, err
			}
			big, err := durable.RunInChildContext(dc, "big", func(ctx context.Context, c *durable.Context) (string, error) {
				var out string
				for _, name := range []string{"part-1", "part-2"} {
					p, err := durable.Step(c, name, func(context.Context) (string, error) {
						stepRuns.Add(1)
						return strings.Repeat(name[len(name)-1:], part), nil
					})
					if err != nil {
						return "", err
					}
					out += p
				}
				return out, nil
			})
			if err != nil {
				return nil, err
			}
			views = append(views, seen{big, itemAt(res, 0).Result, itemAt(res, 1).Result})
			if err := dc.Wait("after", time.Second); err != nil {
				return nil, err
			}
			if dc.Replaying() {
				return nil, errors.New("still replaying after the last operation")
			}
			return len(big), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 4)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != fmt.Sprint(2*part) {
			t.Fatal(out, err)
		}
		if len(views) != 2 {
			t.Fatalf("the results were returned in %d invocations, want 2", len(views))
		}
		if views[0] != views[1] {
			t.Errorf("rebuilt results differ from the live ones: %d/%d/%d vs %d/%d/%d bytes",
				len(views[1].Child), len(views[1].Item0), len(views[1].Item1), len(views[0].Child), len(views[0].Item0), len(views[0].Item1))
		}
		if v := views[1]; len(v.Child) != 2*part || v.Child[0] != '1' || v.Child[2*part-1] != '2' || v.Item0 != "aaaaaaaaaa" || len(v.Item1) != 2*part {
			t.Errorf("rebuilt results: child %d bytes, item 0 %q, item 1 %d bytes", len(v.Child), v.Item0, len(v.Item1))
		}
		if n := stepRuns.Load(); n != 4 {
			t.Errorf("step bodies ran %d times, want 4 (once each)", n)
		}
		for _, name := range []string{"big", "map-item-1"} {
			u := contextSucceed(t, log, name)
			if u.ContextOptions == nil || !aws.ToBool(u.ContextOptions.ReplayChildren) || aws.ToString(u.Payload) != "" {
				t.Errorf("%s SUCCEED: payload %d bytes, options %+v; want empty with ReplayChildren", name, len(aws.ToString(u.Payload)), u.ContextOptions)
			}
		}
		if u := contextSucceed(t, log, "map-item-0"); u.ContextOptions != nil || !strings.Contains(aws.ToString(u.Payload), `"aaaaaaaaaa"`) {
			t.Errorf("small branch SUCCEED: payload %q, options %+v", aws.ToString(u.Payload), u.ContextOptions)
		}
		if n := childrenInState(t, e, aws.ToString(contextSucceed(t, log, "big").Id)); n != 2 {
			t.Errorf("%d children of the finished oversized context in state, want 2", n)
		}
	})
}

// TestRebuildDivergence: rebuilding an oversized child result over code that
// now asks for an operation its history does not hold fails the execution as
// nondeterministic, and checkpoints nothing for that operation.
func TestRebuildDivergence(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		log := &updateLog{API: e.API(), ops: map[string]string{}}
		invocations := 0
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			invocations++
			if _, err := durable.RunInChildContext(dc, "big", func(ctx context.Context, c *durable.Context) (string, error) {
				if invocations > 1 {
					if _, err := durable.Step(c, "added", func(context.Context) (int, error) { return 1, nil }); err != nil {
						return "", err
					}
				}
				return strings.Repeat("z", 300*1024), nil
			}); err != nil {
				return nil, err
			}
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 4)
		if err != nil || out.Status != durable.StatusFailed || out.Error == nil || aws.ToString(out.Error.ErrorType) != "durable.Nondeterministic" {
			t.Fatalf("%+v %v, want FAILED durable.Nondeterministic", out, err)
		}
		if !strings.Contains(aws.ToString(out.Error.ErrorMessage), `"added"`) {
			t.Errorf("error %q does not name the operation", aws.ToString(out.Error.ErrorMessage))
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, u := range log.all {
			if aws.ToString(u.Name) == "added" {
				t.Errorf("the diverging operation was checkpointed: %+v", u)
			}
		}
	})
}
