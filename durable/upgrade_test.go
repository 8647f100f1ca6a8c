package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestEnvelopeExecutionContinuesAfterUpgrade: an execution begun under the
// checkpoint envelope (the default of earlier releases) is continued by a
// handler with the default plain-JSON serdes: its step, child-context,
// condition, batch and callback results replay, and what it records from then
// on is plain JSON.
func TestEnvelopeExecutionContinuesAfterUpgrade(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		type order struct {
			ID    string `json:"id"`
			Total int64  `json:"total"`
		}
		var ran []string
		fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			o, err := durable.Step(dc, "load", func(context.Context) (order, error) { ran = append(ran, "load"); return order{"o-1", 42}, nil })
			if err != nil {
				return nil, err
			}
			c, err := durable.RunInChildContext(dc, "child", func(ctx context.Context, c *durable.Context) (string, error) {
				return durable.Step(c, "inner", func(context.Context) (string, error) { ran = append(ran, "inner"); return "in", nil })
			})
			if err != nil {
				return nil, err
			}
			n, err := durable.WaitForCondition(dc, "poll", 0, func(_ context.Context, s int) (int, bool, error) { ran = append(ran, "poll"); return s + 1, true, nil }, nil)
			if err != nil {
				return nil, err
			}
			res, err := durable.Map(dc, "m", []int{1, 2}, func(ctx context.Context, c *durable.Context, item, _ int) (int, error) { return item * 10, nil }, durable.BatchOptions{})
			if err != nil {
				return nil, err
			}
			ok, err := durable.WaitForCallback[bool](dc, "approve", time.Hour, func(context.Context, string) error { return nil })
			if err != nil {
				return nil, err
			}
			if err := dc.Wait("w", time.Second); err != nil {
				return nil, err
			}
			last, err := durable.Step(dc, "after", func(context.Context) (order, error) { return order{"o-2", 7}, nil })
			return map[string]any{"o": o, "c": c, "n": n, "m": res.Results(), "ok": ok, "last": last}, err
		}
		ctx := context.Background()
		old := newHandler(t, e, fn, durable.Options{Serdes: envelopeSerdes(t)})
		if out, err := e.Drive(ctx, old, 5); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		var cbID string
		for _, op := range e.AllOperations(t) {
			if op.Type == types.OperationTypeCallback {
				cbID = aws.ToString(op.CallbackDetails.CallbackId)
			}
			if r := result(op); r != "" && op.Type != types.OperationTypeCallback && !strings.HasPrefix(r, `{"v":1,`) {
				t.Errorf("before the upgrade %s %s recorded %s, want an envelope", op.Type, aws.ToString(op.Name), r)
			}
		}
		if err := e.CompleteCallback(ctx, cbID, `true`); err != nil {
			t.Fatal(err)
		}
		// Drive the answer under the envelope, so the callback context's
		// result is an envelope too; the wait suspends.
		if out, err := old.Handle(ctx, e.Input(t)); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		ran = nil
		upgraded := newHandler(t, e, fn, durable.Options{})
		out, err := e.Drive(ctx, upgraded, 5)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("after the upgrade: %+v %v", out, err)
		}
		want := `{"c":"in","last":{"id":"o-2","total":7},"m":[10,20],"n":1,"o":{"id":"o-1","total":42},"ok":true}`
		if aws.ToString(out.Result) != want || len(ran) != 0 {
			t.Errorf("result %s (bodies run again: %v), want %s", aws.ToString(out.Result), ran, want)
		}
		for _, op := range e.AllOperations(t) {
			if aws.ToString(op.Name) == "after" && result(op) != `{"id":"o-2","total":7}` {
				t.Errorf("after the upgrade the step recorded %s, want plain JSON", result(op))
			}
		}
	})
}

func result(op types.Operation) string {
	switch {
	case op.StepDetails != nil:
		return aws.ToString(op.StepDetails.Result)
	case op.ContextDetails != nil:
		return aws.ToString(op.ContextDetails.Result)
	case op.CallbackDetails != nil:
		return aws.ToString(op.CallbackDetails.Result)
	case op.ChainedInvokeDetails != nil:
		return aws.ToString(op.ChainedInvokeDetails.Result)
	}
	return ""
}

// TestSubtypeVerifiedOnReplay (specification 3.3.3): an operation replayed
// with the same type and name but another subtype (a Step that became a
// WaitForCondition, a RunInChildContext that became a Parallel) is a
// divergence, reported FAILED durable.Nondeterministic, not a payload
// decoded as something else.
func TestSubtypeVerifiedOnReplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		before, now durable.Func
	}{
		{"Step to WaitForCondition",
			func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				if _, err := durable.Step(dc, "x", func(context.Context) (int, error) { return 1, nil }); err != nil {
					return nil, err
				}
				return nil, dc.Wait("w", time.Second)
			},
			func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return durable.WaitForCondition(dc, "x", 0, func(_ context.Context, s int) (int, bool, error) { return s, true, nil }, nil)
			}},
		{"RunInChildContext to Parallel",
			func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				if _, err := durable.RunInChildContext(dc, "x", func(context.Context, *durable.Context) (int, error) { return 1, nil }); err != nil {
					return nil, err
				}
				return nil, dc.Wait("w", time.Second)
			},
			func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return durable.Parallel(dc, "x", []durable.Branch[int]{func(context.Context, *durable.Context) (int, error) { return 1, nil }}, durable.BatchOptions{})
			}},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			e := b.New(t, json.RawMessage(`{}`), nil)
			ctx := context.Background()
			if out, err := newHandler(t, e, tt.before, durable.Options{}).Handle(ctx, e.Input(t)); err != nil || out.Status != durable.StatusPending {
				t.Fatalf("%s: %+v %v", tt.name, out, err)
			}
			out, err := newHandler(t, e, tt.now, durable.Options{}).Handle(ctx, e.Input(t))
			if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != durable.ErrorTypeNondeterministic ||
				!strings.Contains(aws.ToString(out.Error.ErrorMessage), "subtype") && !strings.Contains(aws.ToString(out.Error.ErrorMessage), "/") {
				t.Errorf("%s: %+v %v, want FAILED %s", tt.name, out, err, durable.ErrorTypeNondeterministic)
			}
		}
	})
}

// TestWaitRounding (specification 4.5.2): a wait is checkpointed in whole
// seconds, rounded up, at least one; a negative one is refused with a
// *DurationError before anything is checkpointed.
func TestWaitRounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want int32 // 0: refused
	}{
		{0, 1}, {time.Nanosecond, 1}, {time.Second, 1}, {1200 * time.Millisecond, 2}, {59*time.Second + 1, 60},
		{-time.Nanosecond, 0}, {-time.Hour, 0},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			e := b.New(t, json.RawMessage(`{}`), nil)
			log := newCheckpointLog(e.API())
			var got error
			h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				got = dc.Wait("w", tt.d)
				return nil, got
			}, durable.Options{})
			out, err := h.Handle(context.Background(), e.Input(t))
			if tt.want == 0 {
				var de *durable.DurationError
				if err != nil || out.Status != durable.StatusFailed || !errors.As(got, &de) || !errors.Is(got, durable.ErrInvalidInput) || len(log.requests) != 0 {
					t.Errorf("%s: %+v %v, error %v, %d checkpoints; want FAILED with a DurationError and none", tt.d, out, err, got, len(log.requests))
				}
				continue
			}
			if err != nil || out.Status != durable.StatusPending || len(log.requests) != 1 || log.requests[0][0].WaitOptions == nil ||
				aws.ToInt32(log.requests[0][0].WaitOptions.WaitSeconds) != tt.want {
				t.Errorf("%s: %+v %v, want PENDING with WaitSeconds %d", tt.d, out, err, tt.want)
			}
		}
	})
}
