package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// updateLog records, per operation ID, what the checkpoints said about it.
type updateLog struct {
	durable.API
	mu  sync.Mutex
	ops map[string]string
	all []types.OperationUpdate
}

func (u *updateLog) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	u.mu.Lock()
	for _, up := range in.Updates {
		if up.Type != types.OperationTypeExecution {
			u.ops[aws.ToString(up.Id)] = fmt.Sprintf("%s %s %s parent=%s", aws.ToString(up.Name), up.Type, aws.ToString(up.SubType), aws.ToString(up.ParentId))
		}
		u.all = append(u.all, up)
	}
	u.mu.Unlock()
	return u.API.CheckpointDurableExecution(ctx, in, opts...)
}

// TestOperationIDsMatchOfficialSDK runs the workflow of testdata/opid/gen.mjs
// and compares every operation's ID, parent, name, type and subtype with what
// @aws/durable-execution-sdk-js 2.4.0 recorded for the same program.
func TestOperationIDsMatchOfficialSDK(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/opid/ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Operations []struct{ Name, Type, SubType, ID, ParentID string }
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, op := range golden.Operations {
		want[op.ID] = fmt.Sprintf("%s %s %s parent=%s", op.Name, op.Type, op.SubType, op.ParentID)
	}
	if len(want) != 33 {
		t.Fatalf("golden file has %d operations", len(want))
	}
	if got := durable.OperationID("3-2-1"); got != "e9fa198e766d7b9b" {
		t.Errorf(`OperationID("3-2-1") = %s`, got)
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		log := &updateLog{API: e.API(), ops: map[string]string{}}
		var callbackID string
		step := func(dc *durable.Context, name string, v int) error {
			_, err := durable.Step(dc, name, func(context.Context) (int, error) { return v, nil })
			return err
		}
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			if err := errors.Join(step(dc, "a", 1), step(dc, "b", 2)); err != nil {
				return nil, err
			}
			if _, err := durable.RunInChildContext(dc, "child", func(ctx context.Context, c *durable.Context) (int, error) {
				if err := step(c, "c1", 3); err != nil {
					return 0, err
				}
				if _, err := durable.RunInChildContext(c, "grandchild", func(ctx context.Context, g *durable.Context) (int, error) {
					return 0, errors.Join(step(g, "g1", 4), step(g, "g2", 5))
				}); err != nil {
					return 0, err
				}
				return 0, step(c, "c2", 6)
			}); err != nil {
				return nil, err
			}
			branch := func(name string, v int) durable.Branch[int] {
				return func(ctx context.Context, c *durable.Context) (int, error) { return v, step(c, name, v) }
			}
			if _, err := durable.Parallel(dc, "par", []durable.Branch[int]{branch("p1", 7), branch("p2", 8)}, durable.BatchOptions{}); err != nil {
				return nil, err
			}
			if _, err := durable.Map(dc, "m", []int{10, 20}, func(ctx context.Context, c *durable.Context, item, _ int) (int, error) {
				return item * 2, step(c, "item", item*2)
			}, durable.BatchOptions{}); err != nil {
				return nil, err
			}
			if err := dc.Wait("pause", time.Second); err != nil {
				return nil, err
			}
			for i := range 8 {
				if err := step(dc, fmt.Sprintf("s%d", i), i); err != nil {
					return nil, err
				}
			}
			w1, err := dc.StartWait("w1", time.Second)
			if err != nil {
				return nil, err
			}
			w2, err := dc.StartWait("w2", 2*time.Second)
			if err != nil {
				return nil, err
			}
			if _, err := durable.Race(dc, "race", w1, w2); err != nil {
				return nil, err
			}
			// The generator's callback times out; this one is answered. The
			// operations are the same.
			if _, err := durable.WaitForCallback[string](dc, "approve", time.Hour, func(_ context.Context, id string) error {
				callbackID = id
				return nil
			}); err != nil {
				return nil, err
			}
			return "done", nil
		}, durable.Options{})
		ctx := context.Background()
		out, err := e.Drive(ctx, h, 8)
		if err != nil || out.Status != durable.StatusPending || callbackID == "" {
			t.Fatal(out, err)
		}
		if err := e.CompleteCallback(ctx, callbackID, `"ok"`); err != nil {
			t.Fatal(err)
		}
		out, err = e.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatal(out, err)
		}
		for id, w := range want {
			if got := log.ops[id]; got != w {
				t.Errorf("operation %s: got %q, want %q", id, got, w)
			}
		}
		if len(log.ops) != len(want) {
			t.Errorf("%d operations checkpointed, the SDK made %d", len(log.ops), len(want))
		}
	})
}

func TestRunInChildContext(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var childRuns, inner atomic.Int32
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			sum, err := durable.RunInChildContext(dc, "sum", func(ctx context.Context, c *durable.Context) (int, error) {
				childRuns.Add(1)
				a, err := durable.Step(c, "a", func(context.Context) (int, error) { inner.Add(1); return 2, nil })
				if err != nil {
					return 0, err
				}
				if err := c.Wait("inside", time.Second); err != nil {
					return 0, err
				}
				return a + 3, nil
			})
			if err != nil {
				return nil, err
			}
			_, ferr := durable.RunInChildContext(dc, "broken", func(ctx context.Context, c *durable.Context) (int, error) {
				return 0, errDeclined
			})
			if err := dc.Wait("after", time.Second); err != nil {
				return nil, err
			}
			var oe *durable.OperationError
			if !errors.Is(ferr, errDeclined) && !errors.As(ferr, &oe) {
				return nil, fmt.Errorf("child failure lost: %v", ferr)
			}
			return sum, nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != "5" {
			t.Fatal(out, err)
		}
		// Invocations: run (suspends inside the child), resume (child ends, suspends
		// on "after"), final. The finished child is not re-entered in the last one.
		if e.Invocations() != 3 || childRuns.Load() != 2 || inner.Load() != 1 {
			t.Errorf("%d invocations, child body ran %d times, its step %d; want 3, 2, 1", e.Invocations(), childRuns.Load(), inner.Load())
		}
		if got := statuses(t, e); got != "sum=CONTEXT:SUCCEEDED broken=CONTEXT:FAILED after=WAIT:SUCCEEDED" {
			t.Errorf("history %s", got)
		}
		// The children of a finished child context are not part of the replayed state.
		for _, op := range e.Operations(t) {
			if aws.ToString(op.ParentId) != "" {
				t.Errorf("child operation %s (%s) still in the state", aws.ToString(op.Id), aws.ToString(op.Name))
			}
		}
	})
}

func TestParallelConcurrencyAndCompletion(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var running, peak, started atomic.Int32
		branch := func(i int, fail bool) durable.Branch[int] {
			return func(ctx context.Context, c *durable.Context) (int, error) {
				return durable.Step(c, "work", func(context.Context) (int, error) {
					started.Add(1)
					n := running.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					time.Sleep(5 * time.Millisecond) // let others overlap if the limit allowed it
					running.Add(-1)
					if fail {
						return 0, durable.Fatal(errDeclined)
					}
					return i * 10, nil
				})
			}
		}
		var res durable.BatchResult[int]
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			var branches []durable.Branch[int]
			for i := range 6 {
				branches = append(branches, branch(i, i == 1))
			}
			var err error
			res, err = durable.Parallel(dc, "fanout", branches, durable.BatchOptions{MaxConcurrency: 2, MinSuccessful: 3, ToleratedFailures: 1})
			if err != nil {
				return nil, err
			}
			return res.Succeeded(), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatal(out, err)
		}
		if peak.Load() > 2 {
			t.Errorf("%d branches ran at once, limit 2", peak.Load())
		}
		if res.CompletionReason != durable.MinSuccessfulReached || res.Succeeded() < 3 || started.Load() == 6 {
			t.Errorf("reason %s, %d succeeded, %d started: %+v", res.CompletionReason, res.Succeeded(), started.Load(), res.All)
		}
		if itemAt(res, 1).Status != durable.ItemFailed || itemAt(res, 5).Status != "" || res.Failed() != 1 || res.Total() != int(started.Load()) || len(res.Errors()) != 1 || len(res.Results()) != res.Succeeded() || !errors.Is(res.Err(), res.Errors()[0]) {
			t.Errorf("items %+v", res.All)
		}
		if got := statuses(t, e); got != "fanout=CONTEXT:SUCCEEDED" {
			t.Errorf("history %s", got)
		}

		// Tolerance exceeded: the batch succeeds, as in the official SDKs, its
		// result says so, and Err fails the function that asks.
		g := b.New(t, json.RawMessage(`{}`), nil)
		h2 := newHandler(t, g, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Map(dc, "all-fail", []int{1, 2, 3}, func(ctx context.Context, c *durable.Context, item, _ int) (int, error) {
				return 0, fmt.Errorf("item %d: %w", item, errDeclined)
			}, durable.BatchOptions{MaxConcurrency: 1, ToleratedFailures: -1, ToleratedFailurePercentage: 50})
			if err != nil {
				return nil, err
			}
			if res.CompletionReason != durable.FailureToleranceExceeded || !errors.Is(res.Err(), durable.ErrBatchFailed) || !errors.Is(res.Err(), errDeclined) {
				return nil, fmt.Errorf("reason %s, Err %v", res.CompletionReason, res.Err())
			}
			return nil, res.Err()
		}, durable.Options{})
		out, err = g.Drive(context.Background(), h2, 5)
		if err != nil || out.Status != durable.StatusFailed || !strings.Contains(aws.ToString(out.Error.ErrorMessage), "2 of 2 started branches failed") {
			t.Fatalf("%+v %v", out, err)
		}
		if got := statuses(t, g); got != "all-fail=CONTEXT:SUCCEEDED" {
			t.Errorf("history %s", got)
		}
	})
}

// TestMapSuspendsAndReplays: map items that wait suspend the batch; completed
// items are replayed, not re-run, when it resumes.
func TestMapSuspendsAndReplays(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var runs sync.Map
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Map(dc, "items", []string{"x", "y", "z"}, func(ctx context.Context, c *durable.Context, item string, i int) (string, error) {
				v, err := durable.Step(c, "upper", func(context.Context) (string, error) {
					n, _ := runs.LoadOrStore(item, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
					return strings.ToUpper(item), nil
				})
				if err != nil {
					return "", err
				}
				if i == 1 {
					if err := c.Wait("slow", time.Second); err != nil {
						return "", err
					}
				}
				return v, nil
			}, durable.BatchOptions{ToleratedFailures: -1})
			if err != nil {
				return nil, err
			}
			var parts []string
			for _, it := range res.All {
				parts = append(parts, it.Result)
			}
			return strings.Join(parts, ""), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || aws.ToString(out.Result) != `"XYZ"` {
			t.Fatal(out, err)
		}
		runs.Range(func(k, v any) bool {
			if n := v.(*atomic.Int32).Load(); n != 1 {
				t.Errorf("item %s ran %d times", k, n)
			}
			return true
		})
		if e.Invocations() != 2 {
			t.Errorf("%d invocations, want 2", e.Invocations())
		}
	})
}

func TestWaitForCondition(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var checks []int
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.WaitForCondition(dc, "until-3", 0, func(ctx context.Context, n int) (int, bool, error) {
				checks = append(checks, n)
				return n + 1, n+1 >= 3, nil
			}, func(int) time.Duration { return time.Second })
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != "3" {
			t.Fatal(out, err)
		}
		if fmt.Sprint(checks) != "[0 1 2]" || e.Invocations() != 3 {
			t.Errorf("checks saw %v over %d invocations; want [0 1 2] over 3", checks, e.Invocations())
		}
		if got := statuses(t, e); got != "until-3=STEP:SUCCEEDED" {
			t.Errorf("history %s", got)
		}
	})
}

func TestInvoke(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		var calls atomic.Int32
		e := b.New(t, json.RawMessage(`{}`), func(op types.Operation) (string, error) {
			calls.Add(1)
			if aws.ToString(op.Name) == "bad" {
				return "", errors.New("function error")
			}
			return `{"total":42}`, nil
		})
		log := &updateLog{API: e.API(), ops: map[string]string{}}
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			v, err := durable.Invoke[map[string]int](dc, "price", "arn:aws:lambda:us-east-1:123456789012:function:pricing:live", map[string]string{"sku": "s-1"})
			if err != nil {
				return nil, err
			}
			_, ierr := durable.Invoke[any](dc, "bad", "pricing", nil)
			var oe *durable.OperationError
			if !errors.As(ierr, &oe) {
				return nil, fmt.Errorf("failed invoke returned %v", ierr)
			}
			return v["total"], nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil || aws.ToString(out.Result) != "42" {
			t.Fatal(out, err)
		}
		if calls.Load() != 2 {
			t.Errorf("invoked %d times", calls.Load())
		}
		var start *types.OperationUpdate
		for i, u := range log.all {
			if u.Type == types.OperationTypeChainedInvoke && u.Action == types.OperationActionStart && aws.ToString(u.Name) == "price" {
				start = &log.all[i]
			}
		}
		if start == nil || aws.ToString(start.Payload) != `{"sku":"s-1"}` || aws.ToString(start.ChainedInvokeOptions.FunctionName) != "arn:aws:lambda:us-east-1:123456789012:function:pricing:live" {
			t.Errorf("START of the invoke: %+v", start)
		}
		if got := statuses(t, e); got != "price=CHAINED_INVOKE:SUCCEEDED bad=CHAINED_INVOKE:FAILED" {
			t.Errorf("history %s", got)
		}
	})
}

// TestLargeResult: a result over MaxResultBytes is checkpointed with the
// EXECUTION operation's SUCCEED and left out of the response.
func TestLargeResult(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		big := strings.Repeat("r", 4096)
		log := &updateLog{API: e.API(), ops: map[string]string{}}
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return big, nil
		}, durable.Options{MaxResultBytes: 1024})
		out, err := e.Drive(context.Background(), h, 3)
		if err != nil || out.Status != durable.StatusSucceeded || out.Result != nil {
			t.Fatal(out, err)
		}
		last := log.all[len(log.all)-1]
		if last.Type != types.OperationTypeExecution || last.Action != types.OperationActionSucceed || aws.ToString(last.Payload) != `"`+big+`"` {
			t.Errorf("last update %s %s (%d bytes)", last.Type, last.Action, len(aws.ToString(last.Payload)))
		}
		for _, op := range e.Operations(t) {
			if op.Type == types.OperationTypeExecution && op.Status != types.OperationStatusSucceeded {
				t.Errorf("execution %s after its SUCCEED checkpoint", op.Status)
			}
		}
		if f := durabletest.Fake(e); f != nil {
			if r, ok := f.Result(); !ok || r != `"`+big+`"` {
				t.Errorf("fake holds result %v (%d bytes)", ok, len(r))
			}
		}
	})
}

// TestObservability counts spans and counters across a retry, a wait and the
// replays: one span per invocation, one per live attempt; attempts and logical
// outcomes separate; replayed steps neither.
func TestObservability(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		fails := 1
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			if _, err := durable.Step(dc, "flaky", func(context.Context) (int, error) {
				if fails > 0 {
					fails--
					return 0, errDeclined
				}
				return 1, nil
			}); err != nil {
				return nil, err
			}
			if err := dc.Wait("w", time.Second); err != nil {
				return nil, err
			}
			return "ok", nil
		}, durable.Options{TracerProvider: tp, MeterProvider: mp})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatal(out, err)
		}
		var names []string
		for _, s := range spans.Ended() {
			names = append(names, s.Name())
		}
		sort.Strings(names)
		// Invocations: attempt 1 fails (retry), attempt 2 succeeds and the wait
		// suspends, the wait ends: 3 invocation spans, 2 attempt spans.
		if got := strings.Join(names, ","); got != "durable.invocation,durable.invocation,durable.invocation,durable.step flaky,durable.step flaky" {
			t.Errorf("spans %s", got)
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		sums := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if d, ok := m.Data.(metricdata.Sum[int64]); ok {
					for _, p := range d.DataPoints {
						sums[m.Name] += p.Value
					}
				}
			}
		}
		if sums[durable.MetricAttempts] != 2 || sums[durable.MetricOperations] != 1 || sums[durable.MetricReplayed] != 1 || sums[durable.MetricInvocations] != 3 {
			t.Errorf("counters %v; want 2 attempts, 1 operation, 1 replay, 3 invocations", sums)
		}
	})
}

// TestCreateCallbackAndStepOptions: a callback created first and its ID sent
// from a step (the delivery is itself durable), then awaited; a step with its
// own retry budget; an at-most-once step interrupted mid-attempt fails
// instead of running its body again.
func TestCreateCallbackAndStepOptions(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var sent []string
		runs := 0
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			cb, err := durable.CreateCallback[string](dc, "approval", durable.CallbackOptions{Timeout: time.Hour})
			if err != nil {
				return nil, err
			}
			if _, err := durable.Step(dc, "send", func(context.Context) (bool, error) { sent = append(sent, cb.ID()); return true, nil }); err != nil {
				return nil, err
			}
			_, err = durable.StepWith(dc, "once-more", durable.StepOptions{MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Second }},
				func(context.Context) (int, error) {
					runs++
					if runs == 1 {
						return 0, errDeclined
					}
					return runs, nil
				})
			if err != nil {
				return nil, err
			}
			return cb.Result()
		}, durable.Options{MaxAttempts: 1})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil || out.Status != durable.StatusPending || len(sent) != 1 || runs != 2 {
			t.Fatalf("%+v %v, sent %v, runs %d", out, err, sent, runs)
		}
		if err := e.CompleteCallback(context.Background(), sent[0], `"yes"`); err != nil {
			t.Fatal(err)
		}
		out, err = e.Drive(context.Background(), h, 10)
		if err != nil || aws.ToString(out.Result) != `"yes"` || len(sent) != 1 {
			t.Fatalf("%+v %v, sent %v", out, err, sent)
		}

		g := b.New(t, json.RawMessage(`{}`), nil)
		api := &lossyAPI{API: g.API(), lose: func(in *lambda.CheckpointDurableExecutionInput) bool {
			return in.Updates[0].Action == types.OperationActionSucceed
		}}
		bodies := 0
		h2 := newHandlerAPI(t, g, api, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.StepWith(dc, "pay", durable.StepOptions{AtMostOnce: true, MaxAttempts: 1}, func(context.Context) (int, error) {
				bodies++
				return 1, nil
			})
		}, durable.Options{})
		if _, err := g.Drive(context.Background(), h2, 5); !errors.Is(err, durable.ErrCheckpoint) {
			t.Fatalf("lost checkpoint: %v", err)
		}
		out, err = g.Drive(context.Background(), h2, 5)
		if err != nil || out.Status != durable.StatusFailed || bodies != 1 || !strings.Contains(aws.ToString(out.Error.ErrorMessage), "interrupted") {
			t.Fatalf("%+v %v, body ran %d times", out, err, bodies)
		}
	})
}

// TestSuspendedBranchKeepsItsSlot: branches start in index order while there is
// room; a suspended branch stays in flight and keeps its slot, so whether a
// later branch starts in the same invocation depends on MaxConcurrency, not on
// which goroutine ran first.
func TestSuspendedBranchKeepsItsSlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit int
		ranIn int32 // invocation in which the second branch's step ran
	}{{0, 1}, {2, 1}, {1, 2}}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			for range 5 { // the old rule lost this race now and then
				e := b.New(t, json.RawMessage(`{}`), nil)
				var ranIn atomic.Int32
				h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					_, err := durable.Parallel(dc, "p", []durable.Branch[int]{
						func(ctx context.Context, c *durable.Context) (int, error) { return 0, c.Wait("w", time.Second) },
						func(ctx context.Context, c *durable.Context) (int, error) {
							return durable.Step(c, "s", func(context.Context) (int, error) {
								ranIn.Store(int32(e.Invocations()))
								return 1, nil
							})
						},
					}, durable.BatchOptions{MaxConcurrency: tt.limit})
					return nil, err
				}, durable.Options{})
				if out, err := e.Drive(context.Background(), h, 5); err != nil || out.Status != durable.StatusSucceeded {
					t.Fatalf("limit %d: %+v %v", tt.limit, out, err)
				}
				if got := ranIn.Load(); got != tt.ranIn {
					t.Errorf("limit %d: second branch ran in invocation %d, want %d", tt.limit, got, tt.ranIn)
				}
			}
		}
	})
}
