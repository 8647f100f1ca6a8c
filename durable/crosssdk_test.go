package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// crossFunc is the function of testdata/crosssdk/invoke.mjs written with
// cairn: step, wait 1 s, step.
func crossFunc(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
	var ev struct {
		Order string `json:"order"`
	}
	if err := json.Unmarshal(in, &ev); err != nil {
		return nil, err
	}
	type first struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}
	f, err := durable.Step(dc, "first", func(context.Context) (first, error) { return first{ev.Order, 42}, nil })
	if err != nil {
		return nil, err
	}
	if err := dc.Wait("pause", time.Second); err != nil {
		return nil, err
	}
	s, err := durable.Step(dc, "second", func(context.Context) (string, error) { return fmt.Sprintf("%s:%d", f.Order, f.Amount*2), nil })
	return map[string]any{"first": f, "second": s}, err
}

// TestCrossSDK: one execution on AWS's checkpoint server, its first
// invocation run by the official TypeScript SDK 2.4.0 and its second by
// cairn, and the reverse; both end SUCCEEDED with the same result, which
// needs both to read what the other checkpointed.
func TestCrossSDK(t *testing.T) {
	t.Parallel()
	endpoint, err := durabletest.Endpoint()
	if err != nil {
		t.Skip(err)
	}
	modules, err := durabletest.NodeModules()
	if err != nil {
		t.Skip(err)
	}
	node, err := durabletest.Node(modules)
	if err != nil {
		t.Skip(err)
	}
	script, err := filepath.Abs("testdata/crosssdk/invoke.mjs")
	if err != nil {
		t.Fatal(err)
	}
	ts := durabletest.NodeInvoker{Node: node, Script: script, Args: []string{modules, endpoint}}
	const want = `{"first":{"order":"o-9","amount":42},"second":"o-9:84"}`
	for _, order := range [][2]string{{"typescript", "cairn"}, {"cairn", "typescript"}} {
		t.Run(order[0]+" then "+order[1], func(t *testing.T) {
			t.Parallel()
			var b durabletest.Backend
			for _, c := range durabletest.Backends() {
				if c.Real {
					b = c
				}
			}
			e := b.New(t, json.RawMessage(`{"order":"o-9"}`), nil)
			gh := newHandler(t, e, crossFunc, durable.Options{})
			runners := map[string]durabletest.Invoker{"typescript": ts, "cairn": gh}
			ctx := context.Background()
			// Invocation 1 runs the first step and suspends on the wait,
			// which the driver then fires; invocation 2 finishes.
			// Drive with room for one invocation reports the execution
			// still pending once the wait is fired: what is expected here.
			if out, err := e.Drive(ctx, onlyOnce{runners[order[0]]}, 1); err == nil || !strings.Contains(err.Error(), "still pending") {
				t.Fatalf("first invocation: %+v %v, want it suspended on the wait", out, err)
			}
			out, err := e.Drive(ctx, runners[order[1]], 3)
			if err != nil || out.Status != durable.StatusSucceeded || !sameJSON(aws.ToString(out.Result), want) {
				t.Fatalf("%+v %v, want SUCCEEDED with %s", out, err, want)
			}
			if n := e.Invocations(); n != 2 {
				t.Errorf("%d invocations, want 2", n)
			}
		})
	}
}

// onlyOnce is an Invoker for one invocation of Drive: Drive then reports it
// still pending, which is expected.
type onlyOnce struct{ durabletest.Invoker }

func (o onlyOnce) InvokeRaw(ctx context.Context, payload []byte) (durable.Output, error) {
	if r, ok := o.Invoker.(durabletest.RawInvoker); ok {
		return r.InvokeRaw(ctx, payload)
	}
	in, err := durable.DecodeInput(payload)
	if err != nil {
		return durable.Output{}, err
	}
	return o.Handle(ctx, in)
}
