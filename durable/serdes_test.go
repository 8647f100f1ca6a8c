package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/checkpoint"
	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// upperSerdes records JSON in upper case behind a "U:" prefix, to show which
// operations used it.
type upperSerdes struct{}

func (s *upperSerdes) Serialize(sc durable.SerdesContext, v any) (*string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := "U:" + strings.ToUpper(string(b))
	return &out, nil
}

func (s *upperSerdes) Deserialize(sc durable.SerdesContext, data *string, target any) error {
	if data == nil {
		return nil
	}
	body, ok := strings.CutPrefix(*data, "U:")
	if !ok {
		return fmt.Errorf("payload %q was not written by upperSerdes", *data)
	}
	return json.Unmarshal([]byte(body), target)
}

// TestSerdesPerHandlerAndOperation: a Serdes set on a step, a child context
// or a batch's items encodes that operation's payload only, the handler's
// every other; live results and replays both decode with the same one.
func TestSerdesPerHandlerAndOperation(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		op := &upperSerdes{}
		var seen []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			a, err := durable.StepWith(dc, "custom", durable.StepOptions{Serdes: op}, func(context.Context) (string, error) { return "abc", nil })
			if err != nil {
				return nil, err
			}
			p, err := durable.Step(dc, "plain", func(context.Context) (string, error) { return "def", nil })
			if err != nil {
				return nil, err
			}
			c, err := durable.RunInChildContextWith(dc, "child", durable.ChildOptions{Serdes: op}, func(context.Context, *durable.Context) (string, error) { return "ghi", nil })
			if err != nil {
				return nil, err
			}
			r, err := durable.Map(dc, "m", []string{"x"}, func(_ context.Context, _ *durable.Context, s string, _ int) (string, error) { return s, nil },
				durable.BatchOptions{ItemSerdes: op})
			if err != nil {
				return nil, err
			}
			seen = append(seen, a+p+c+strings.Join(r.Results(), ""))
			return nil, dc.Wait("w", time.Second)
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 4)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		// Live values come back through the serdes too, as in the official
		// SDKs, so the live run and the replay see the same values.
		if len(seen) != 2 || seen[0] != "ABCdefGHIX" || seen[1] != "ABCdefGHIX" {
			t.Errorf("values live and replayed: %q", seen)
		}
		got := map[string]string{}
		for _, o := range e.AllOperations(t) {
			got[aws.ToString(o.Name)] = result(o)
		}
		want := map[string]string{"custom": `U:"ABC"`, "plain": `"def"`, "child": `U:"GHI"`, "map-item-0": `U:"X"`,
			"m": `{"all":[{"result":"X","index":0,"status":"SUCCEEDED"}],"completionReason":"ALL_COMPLETED"}`}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s recorded %s, want %s", name, got[name], w)
			}
		}
	})
}

// TestSerdesLimitsAndErrors: the default serdes keeps checkpoint's limits and
// typed errors: a step result over MaxBytes fails the step with a
// *durable.SerdesError wrapping checkpoint.ErrTooLarge, and a payload edited
// into invalid JSON fails the replay with checkpoint.ErrSyntax.
func TestSerdesLimitsAndErrors(t *testing.T) {
	t.Parallel()
	small, err := durable.NewJSONSerdes(checkpoint.Options{MaxBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := durable.NewJSONSerdes(checkpoint.Options{MaxBytes: -1}); err == nil {
		t.Error("NewJSONSerdes accepted MaxBytes -1")
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var got error
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, got = durable.Step(dc, "big", func(context.Context) (string, error) { return strings.Repeat("x", 100), nil })
			return nil, got
		}, durable.Options{Serdes: small})
		out, err := e.Drive(context.Background(), h, 2)
		var se *durable.SerdesError
		if err != nil || out.Status != durable.StatusFailed || !errors.As(got, &se) || !errors.Is(got, checkpoint.ErrTooLarge) ||
			aws.ToString(out.Error.ErrorType) != durable.ErrorTypeStep || se.ErrorType() != "SerdesError" {
			t.Errorf("%+v %v: step error %v", out, err, got)
		}
		var step types.Operation
		for _, o := range e.AllOperations(t) {
			if aws.ToString(o.Name) == "big" {
				step = o
			}
		}
		if step.Status != types.OperationStatusFailed || aws.ToString(step.StepDetails.Error.ErrorType) != "SerdesError" {
			t.Errorf("step recorded %s %+v", step.Status, step.StepDetails)
		}
	})
}

// TestExecutionResultAsJSONStringify: the execution's result is written as
// JSON.stringify writes it (no HTML escaping), and a function returning
// nothing returns no Result, as the official SDKs do for undefined.
func TestExecutionResultAsJSONStringify(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		result any
		want   *string
	}{{nil, nil}, {struct{}{}, nil}, {"<a&b>", aws.String(`"<a&b>"`)}, {map[string]int{"n": 1}, aws.String(`{"n":1}`)}} {
		e := durabletest.Backends()[0].New(t, json.RawMessage(`{}`), nil)
		h := newHandler(t, e, func(context.Context, *durable.Context, json.RawMessage) (any, error) { return tt.result, nil }, durable.Options{})
		out, err := e.Drive(context.Background(), h, 1)
		if err != nil || out.Status != durable.StatusSucceeded || (out.Result == nil) != (tt.want == nil) || tt.want != nil && *out.Result != *tt.want {
			t.Errorf("%#v: %+v %v, want Result %v", tt.result, out, err, show(tt.want))
		}
	}
}

// TestSerdesPerConditionAndInvoke: ConditionOptions.Serdes encodes a
// condition's state between checks and its result, and InvokeOptions' serdes
// the input handed to the invoked function and its result, live and replayed
// alike; the rest of the execution keeps the handler's plain JSON.
func TestSerdesPerConditionAndInvoke(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		var invoked []string
		e := b.New(t, json.RawMessage(`{}`), func(op types.Operation) (string, error) {
			invoked = append(invoked, aws.ToString(op.Name))
			return `U:{"TOTAL":20}`, nil
		})
		op := &upperSerdes{}
		type state struct {
			Phase string `json:"phase"`
			N     int    `json:"n"`
		}
		type price struct {
			Total int `json:"total"`
		}
		var seen []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			s, err := durable.WaitForConditionWith(dc, "poll", state{Phase: "start"}, durable.ConditionOptions{Serdes: op, Wait: func(int) time.Duration { return time.Second }},
				func(_ context.Context, s state) (state, bool, error) {
					s.N++
					return s, s.N >= 2, nil
				})
			if err != nil {
				return nil, err
			}
			p, err := durable.InvokeWith[price](dc, "price", "pricing", map[string]string{"sku": "a-1"}, durable.InvokeOptions{PayloadSerdes: op, ResultSerdes: op})
			if err != nil {
				return nil, err
			}
			plain, err := durable.WaitForCondition(dc, "plain", 0, func(_ context.Context, n int) (int, bool, error) { return n + 1, true, nil }, nil)
			if err != nil {
				return nil, err
			}
			seen = append(seen, fmt.Sprintf("%s/%d/%d/%d", s.Phase, s.N, p.Total, plain))
			return nil, dc.Wait("w", time.Second)
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 8)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		// The phase went through upperSerdes and back: upper case from the
		// first check on, live and replayed.
		if len(seen) != 2 || seen[0] != "START/2/20/1" || seen[1] != seen[0] {
			t.Errorf("values live and replayed: %q", seen)
		}
		if len(invoked) != 1 {
			t.Errorf("pricing invoked %d times, want 1", len(invoked))
		}
		got := map[string]string{}
		for _, o := range e.AllOperations(t) {
			got[aws.ToString(o.Name)] = result(o)
		}
		want := map[string]string{"poll": `U:{"PHASE":"START","N":2}`, "price": `U:{"TOTAL":20}`, "plain": `1`}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s recorded %s, want %s", name, got[name], w)
			}
		}
		// The fake keeps what was handed to the invoked function.
		if f, ok := e.API().(interface {
			InvokeInput(string) (string, string)
		}); ok {
			for _, o := range e.AllOperations(t) {
				if aws.ToString(o.Name) != "price" {
					continue
				}
				if fn, in := f.InvokeInput(aws.ToString(o.Id)); fn != "pricing" || in != `U:{"SKU":"A-1"}` {
					t.Errorf("invoked %s with %s, want pricing with U:{\"SKU\":\"A-1\"}", fn, in)
				}
			}
		}
	})
}
