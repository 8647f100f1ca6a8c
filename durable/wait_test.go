package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// checkpointLog records every accepted checkpoint request and, per operation,
// the last status the service reported for it in a checkpoint response: the
// service's word on operations that GetDurableExecutionState no longer lists
// (the children of a finished context).
type checkpointLog struct {
	durable.API
	mu       sync.Mutex
	requests [][]types.OperationUpdate
	names    map[string]string // operation ID -> name
	status   map[string]types.OperationStatus
}

func newCheckpointLog(api durable.API) *checkpointLog {
	return &checkpointLog{API: api, names: map[string]string{}, status: map[string]types.OperationStatus{}}
}

func (l *checkpointLog) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	out, err := l.API.CheckpointDurableExecution(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, in.Updates)
	for _, u := range in.Updates {
		if u.Name != nil {
			l.names[aws.ToString(u.Id)] = *u.Name
		}
	}
	if out.NewExecutionState != nil {
		for _, op := range out.NewExecutionState.Operations {
			l.status[aws.ToString(op.Id)] = op.Status
		}
	}
	return out, nil
}

// statusOf is the last reported status of the operation named name.
func (l *checkpointLog) statusOf(name string) types.OperationStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, n := range l.names {
		if n == name {
			return l.status[id]
		}
	}
	return ""
}

// updates returns the names of the updates of type typ with action, in order.
func (l *checkpointLog) updates(typ types.OperationType, action types.OperationAction) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, req := range l.requests {
		for _, u := range req {
			if u.Type == typ && u.Action == action {
				out = append(out, aws.ToString(u.Name))
			}
		}
	}
	return out
}

// TestWaitCancel: StartWait starts a wait without blocking; Cancel checkpoints
// CANCEL once for a STARTED wait and nothing for an elapsed or cancelled one;
// Wait then returns ErrWaitCancelled, live and on replay.
func TestWaitCancel(t *testing.T) {
	t.Parallel()
	cancelled := func(err error) string {
		var oe *durable.OperationError
		return fmt.Sprintf("cancelled=%t operationError=%t", errors.Is(err, durable.ErrWaitCancelled), errors.As(err, &oe))
	}
	tests := []struct {
		name        string
		fn          func(dc *durable.Context) (any, error)
		result      string // JSON result
		history     string
		cancels     int
		invocations int
		elapsed     time.Duration // on the fake's clock
	}{
		{
			name: "cancel a started wait, replayed",
			fn: func(dc *durable.Context) (any, error) {
				w, err := dc.StartWait("timeout", time.Hour)
				if err != nil {
					return nil, err
				}
				if _, err := durable.Step(dc, "work", func(context.Context) (int, error) { return 1, nil }); err != nil {
					return nil, err
				}
				if err := w.Cancel(); err != nil {
					return nil, err
				}
				werr := w.Wait()
				// A second invocation replays the cancel: it must not cancel again.
				if err := dc.Wait("pause", time.Second); err != nil {
					return nil, err
				}
				return cancelled(werr), nil
			},
			result:      `"cancelled=true operationError=true"`,
			history:     "timeout=WAIT:CANCELLED work=STEP:SUCCEEDED pause=WAIT:SUCCEEDED",
			cancels:     1,
			invocations: 2,
			elapsed:     time.Second,
		},
		{
			name: "cancel twice in one invocation",
			fn: func(dc *durable.Context) (any, error) {
				w, err := dc.StartWait("timeout", time.Hour)
				if err != nil {
					return nil, err
				}
				if err := errors.Join(w.Cancel(), w.Cancel()); err != nil {
					return nil, err
				}
				return cancelled(w.Wait()), nil
			},
			result:      `"cancelled=true operationError=true"`,
			history:     "timeout=WAIT:CANCELLED",
			cancels:     1,
			invocations: 1,
		},
		{
			name: "cancel an elapsed wait does nothing",
			fn: func(dc *durable.Context) (any, error) {
				w, err := dc.StartWait("short", time.Second)
				if err != nil {
					return nil, err
				}
				if err := w.Wait(); err != nil {
					return nil, err
				}
				if err := w.Cancel(); err != nil {
					return nil, err
				}
				return w.Wait() == nil, nil
			},
			result:      `true`,
			history:     "short=WAIT:SUCCEEDED",
			invocations: 2,
			elapsed:     time.Second,
		},
		{
			name: "cancel inside a child context",
			fn: func(dc *durable.Context) (any, error) {
				return durable.RunInChildContext(dc, "child", func(ctx context.Context, c *durable.Context) (string, error) {
					w, err := c.StartWait("timeout", time.Hour)
					if err != nil {
						return "", err
					}
					if err := w.Cancel(); err != nil {
						return "", err
					}
					return cancelled(w.Wait()), nil
				})
			},
			result:      `"cancelled=true operationError=true"`,
			history:     "child=CONTEXT:SUCCEEDED",
			cancels:     1,
			invocations: 1,
		},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			e := b.New(t, json.RawMessage(`{}`), nil)
			start := e.Now()
			log := newCheckpointLog(e.API())
			h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return tt.fn(dc)
			}, durable.Options{})
			out, err := e.Drive(context.Background(), h, 5)
			if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != tt.result {
				t.Errorf("%s: %+v %v, want SUCCEEDED %s", tt.name, out, err, tt.result)
				continue
			}
			if got := statuses(t, e); got != tt.history {
				t.Errorf("%s: history %s, want %s", tt.name, got, tt.history)
			}
			if got := log.updates(types.OperationTypeWait, types.OperationActionCancel); len(got) != tt.cancels {
				t.Errorf("%s: WAIT CANCEL updates %v, want %d", tt.name, got, tt.cancels)
			}
			if got := e.Invocations(); got != tt.invocations {
				t.Errorf("%s: %d invocations, want %d", tt.name, got, tt.invocations)
			}
			if !b.Real {
				if got := e.Now().Sub(start); got != tt.elapsed {
					t.Errorf("%s: clock advanced %s, want %s", tt.name, got, tt.elapsed)
				}
			}
		}
	})
}

// TestBatchCancelsWaitsOfUnfinishedBranches: a Parallel or Map that completes
// early by its completion policy cancels every STARTED wait inside the
// branches it leaves suspended, at any depth, in the checkpoint recording the
// batch's outcome, so the execution ends without the service firing them.
func TestBatchCancelsWaitsOfUnfinishedBranches(t *testing.T) {
	t.Parallel()
	hour := func(name string) durable.Branch[string] {
		return func(ctx context.Context, c *durable.Context) (string, error) {
			return "slow", c.Wait(name, time.Hour)
		}
	}
	fast := func(ctx context.Context, c *durable.Context) (string, error) {
		return durable.Step(c, "fast", func(context.Context) (string, error) { return "fast", nil })
	}
	summary := func(res durable.BatchResult[string]) string {
		var items []string
		for _, it := range res.All {
			items = append(items, it.Status)
		}
		return res.CompletionReason + " " + strings.Join(items, ",")
	}
	tests := []struct {
		name        string
		fakeOnly    string // why the case runs on the fake only
		batch       string // the batch's name
		fn          func(dc *durable.Context) (any, error)
		status      durable.Status
		result      string // JSON result, or a fragment of the error message
		cancelled   []string
		invocations int
		elapsed     time.Duration
	}{
		{
			name:  "parallel, min successful reached",
			batch: "race",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Parallel(dc, "race", []durable.Branch[string]{hour("hour"), fast}, durable.BatchOptions{MinSuccessful: 1})
				return summary(res), err
			},
			status: durable.StatusSucceeded, result: `"MIN_SUCCESSFUL_REACHED STARTED,SUCCEEDED"`,
			cancelled: []string{"hour"}, invocations: 1,
		},
		{
			name:  "parallel, failure tolerance exceeded",
			batch: "race",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Parallel(dc, "race", []durable.Branch[string]{hour("hour"), func(context.Context, *durable.Context) (string, error) {
					return "", errDeclined
				}}, durable.BatchOptions{})
				return summary(res), err
			},
			// As in the official SDKs the batch succeeds, its result reporting
			// the failure, and the suspended branch's wait is cancelled.
			status: durable.StatusSucceeded, result: "FAILURE_TOLERANCE_EXCEEDED STARTED,FAILED",
			cancelled: []string{"hour"}, invocations: 1,
		},
		{
			name:  "map, wait nested in a child context",
			batch: "items",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Map(dc, "items", []int{0, 1}, func(ctx context.Context, c *durable.Context, item, _ int) (string, error) {
					if item == 1 {
						return "fast", nil
					}
					return durable.RunInChildContext(c, "inner", func(ctx context.Context, g *durable.Context) (string, error) {
						return "slow", g.Wait("hour", time.Hour)
					})
				}, durable.BatchOptions{MinSuccessful: 1})
				return summary(res), err
			},
			status: durable.StatusSucceeded, result: `"MIN_SUCCESSFUL_REACHED STARTED,SUCCEEDED"`,
			cancelled: []string{"hour"}, invocations: 1,
		},
		{
			name:  "nested parallel left suspended",
			batch: "outer",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Parallel(dc, "outer", []durable.Branch[string]{
					func(ctx context.Context, c *durable.Context) (string, error) {
						inner, err := durable.Parallel(c, "inner", []durable.Branch[string]{hour("hour-a"), hour("hour-b")}, durable.BatchOptions{})
						return summary(inner), err
					},
					fast,
				}, durable.BatchOptions{MinSuccessful: 1})
				return summary(res), err
			},
			status: durable.StatusSucceeded, result: `"MIN_SUCCESSFUL_REACHED STARTED,SUCCEEDED"`,
			cancelled: []string{"hour-a", "hour-b"}, invocations: 1,
		},
		{
			name:  "replayed after completion",
			batch: "race",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Parallel(dc, "race", []durable.Branch[string]{hour("hour"), fast}, durable.BatchOptions{MinSuccessful: 1})
				if err != nil {
					return nil, err
				}
				// The next invocation replays the finished batch: no second CANCEL.
				return summary(res), dc.Wait("after", time.Second)
			},
			status: durable.StatusSucceeded, result: `"MIN_SUCCESSFUL_REACHED STARTED,SUCCEEDED"`,
			cancelled: []string{"hour"}, invocations: 2, elapsed: time.Second,
		},
		{
			name:     "completed in a later invocation",
			fakeOnly: "the checkpoint-server driver fires every started wait at once, so both branches would succeed",
			batch:    "race",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Parallel(dc, "race", []durable.Branch[string]{hour("hour"), func(ctx context.Context, c *durable.Context) (string, error) {
					return "second", c.Wait("second", time.Second)
				}}, durable.BatchOptions{MinSuccessful: 1})
				return summary(res), err
			},
			status: durable.StatusSucceeded, result: `"MIN_SUCCESSFUL_REACHED STARTED,SUCCEEDED"`,
			cancelled: []string{"hour"}, invocations: 2, elapsed: time.Second,
		},
		{
			name:  "all completed: nothing to cancel",
			batch: "race",
			fn: func(dc *durable.Context) (any, error) {
				res, err := durable.Parallel(dc, "race", []durable.Branch[string]{func(ctx context.Context, c *durable.Context) (string, error) {
					return "second", c.Wait("second", time.Second)
				}, fast}, durable.BatchOptions{})
				return summary(res), err
			},
			status: durable.StatusSucceeded, result: `"ALL_COMPLETED SUCCEEDED,SUCCEEDED"`,
			invocations: 2, elapsed: time.Second,
		},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			if b.Real && tt.fakeOnly != "" {
				t.Logf("%s: fake only: %s", tt.name, tt.fakeOnly)
				continue
			}
			e := b.New(t, json.RawMessage(`{}`), nil)
			start := e.Now()
			log := newCheckpointLog(e.API())
			h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return tt.fn(dc)
			}, durable.Options{})
			out, err := e.Drive(context.Background(), h, 5)
			if err != nil || out.Status != tt.status {
				t.Errorf("%s: %+v %v, want %s", tt.name, out, err, tt.status)
				continue
			}
			got := aws.ToString(out.Result)
			if out.Error != nil {
				got = aws.ToString(out.Error.ErrorMessage)
			}
			if !strings.Contains(got, tt.result) {
				t.Errorf("%s: result %s, want %s", tt.name, got, tt.result)
			}
			cancels := log.updates(types.OperationTypeWait, types.OperationActionCancel)
			slices.Sort(cancels)
			if !slices.Equal(cancels, tt.cancelled) {
				t.Errorf("%s: WAIT CANCEL updates %v, want %v", tt.name, cancels, tt.cancelled)
			}
			for _, name := range tt.cancelled {
				if st := log.statusOf(name); st != types.OperationStatusCancelled {
					t.Errorf("%s: wait %s is %s, want CANCELLED", tt.name, name, st)
				}
			}
			// The cancels travel with the batch's outcome: both apply or neither.
			for _, req := range log.requests {
				hasCancel := slices.ContainsFunc(req, func(u types.OperationUpdate) bool { return u.Action == types.OperationActionCancel })
				closesBatch := slices.ContainsFunc(req, func(u types.OperationUpdate) bool {
					return u.Type == types.OperationTypeContext && aws.ToString(u.Name) == tt.batch &&
						(u.Action == types.OperationActionSucceed || u.Action == types.OperationActionFail)
				})
				if hasCancel && !closesBatch {
					t.Errorf("%s: CANCEL checkpointed without the batch's outcome: %v", tt.name, req)
				}
			}
			if got := e.Invocations(); got != tt.invocations {
				t.Errorf("%s: %d invocations, want %d", tt.name, got, tt.invocations)
			}
			if f := durabletest.Fake(e); f != nil {
				if got := e.Now().Sub(start); got != tt.elapsed {
					t.Errorf("%s: clock advanced %s, want %s", tt.name, got, tt.elapsed)
				}
				for _, op := range f.Operations() {
					if slices.Contains(tt.cancelled, aws.ToString(op.Name)) && op.Status != types.OperationStatusCancelled {
						t.Errorf("%s: fake history: %s is %s", tt.name, aws.ToString(op.Name), op.Status)
					}
				}
			}
		}
	})
}

// TestParallelNamed: ParallelNamed records each branch's CONTEXT under the name
// given, replays by it, and refuses names the service cannot record or that
// repeat, with a *NameError naming the field and value.
func TestParallelNamed(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 256)
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		log := newCheckpointLog(e.API())
		var res durable.BatchResult[string]
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			var err error
			res, err = durable.ParallelNamed(dc, "checkout", []durable.NamedBranch[string]{
				{Name: "charge card", Fn: func(ctx context.Context, c *durable.Context) (string, error) {
					// Suspends once, so the second invocation replays the names.
					return "charged", c.Wait("settle", time.Second)
				}},
				{Name: "reserve-stock", Fn: func(ctx context.Context, c *durable.Context) (string, error) {
					return durable.Step(c, "reserve", func(context.Context) (string, error) { return "reserved", nil })
				}},
				{Name: long, Fn: func(ctx context.Context, c *durable.Context) (string, error) { return "", errDeclined }},
			}, durable.BatchOptions{ToleratedFailures: 1})
			if err != nil {
				return nil, err
			}
			return res.Results(), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `["charged","reserved"]` {
			t.Fatalf("%+v %v", out, err)
		}
		if got, want := log.updates(types.OperationTypeContext, types.OperationActionStart), []string{"checkout", "charge card", "reserve-stock", long}; !sameSet(got, want) {
			t.Errorf("CONTEXT starts %q, want %q", got, want)
		}
		var subs []string
		for _, req := range log.requests {
			for _, u := range req {
				if u.Type == types.OperationTypeContext && u.Action == types.OperationActionStart && aws.ToString(u.Name) != "checkout" {
					subs = append(subs, aws.ToString(u.SubType))
				}
			}
		}
		if len(subs) != 3 || slices.ContainsFunc(subs, func(s string) bool { return s != "ParallelBranch" }) {
			t.Errorf("branch subtypes %v", subs)
		}
		if errs := res.Errors(); len(errs) != 1 || errs[0].Name != long {
			t.Errorf("errors %+v", errs)
		}
		if e.Invocations() != 2 || statuses(t, e) != "checkout=CONTEXT:SUCCEEDED" {
			t.Errorf("%d invocations, history %s", e.Invocations(), statuses(t, e))
		}

		fn := func(context.Context, *durable.Context) (string, error) { return "", nil }
		bad := []struct {
			name         string
			branches     []durable.NamedBranch[string]
			field, value string
		}{
			{"empty", []durable.NamedBranch[string]{{Name: "a", Fn: fn}, {Name: "", Fn: fn}}, "branches[1].Name", ""},
			{"duplicate", []durable.NamedBranch[string]{{Name: "a", Fn: fn}, {Name: "b", Fn: fn}, {Name: "a", Fn: fn}}, "branches[2].Name", "a"},
			{"too long", []durable.NamedBranch[string]{{Name: long + "n", Fn: fn}}, "branches[0].Name", long + "n"},
			{"not ASCII", []durable.NamedBranch[string]{{Name: "café", Fn: fn}}, "branches[0].Name", "café"},
			{"control character", []durable.NamedBranch[string]{{Name: "a\tb", Fn: fn}}, "branches[0].Name", "a\tb"},
		}
		for _, tt := range bad {
			g := b.New(t, json.RawMessage(`{}`), nil)
			var got error
			h := newHandler(t, g, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				_, got = durable.ParallelNamed(dc, "checkout", tt.branches, durable.BatchOptions{})
				return nil, got
			}, durable.Options{})
			out, err := g.Drive(context.Background(), h, 2)
			var ne *durable.NameError
			if err != nil || out.Status != durable.StatusFailed || !errors.As(got, &ne) || !errors.Is(got, durable.ErrInvalidInput) ||
				ne.Field != tt.field || ne.Value != tt.value || !strings.Contains(got.Error(), tt.field) {
				t.Errorf("%s: %+v %v: %v", tt.name, out, err, got)
			}
			if h := statuses(t, g); h != "" {
				t.Errorf("%s: recorded %s", tt.name, h)
			}
		}
		g := b.New(t, json.RawMessage(`{}`), nil)
		var got error
		h = newHandler(t, g, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, got = durable.ParallelNamed(dc, "checkout", []durable.NamedBranch[string]{{Name: "a"}}, durable.BatchOptions{})
			return nil, got
		}, durable.Options{})
		if out, err := g.Drive(context.Background(), h, 2); err != nil || out.Status != durable.StatusFailed || !errors.Is(got, durable.ErrInvalidInput) {
			t.Errorf("nil Fn: %+v %v: %v", out, err, got)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
