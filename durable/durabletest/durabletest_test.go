package durabletest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestHelpers: on both backends, Operations holds the children of finished
// contexts (branches, the callback and submitter of a WaitForCallback),
// lookups by name and index find them, the printer shows the tree, a callback
// is answered by its operation's name, and the EXECUTION operation ends
// SUCCEEDED once the function returned.
func TestHelpers(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h, err := durable.NewHandler(e.API(), func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			if _, err := durable.Parallel(dc, "fan", []durable.Branch[int]{
				func(ctx context.Context, c *durable.Context) (int, error) {
					return durable.Step(c, "one", func(context.Context) (int, error) { return 1, nil })
				},
			}, durable.BatchOptions{}); err != nil {
				return nil, err
			}
			return durable.WaitForCallback[string](dc, "approve", time.Hour, func(context.Context, string) error { return nil })
		}, durable.Options{Now: e.Now})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := durabletest.CompleteCallbackByName(ctx, t, e, "approve", "yes"); err != nil {
			t.Fatal(err)
		}
		if err := durabletest.CompleteCallbackByName(ctx, t, e, "nobody", "x"); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
			t.Errorf("answering an unknown callback: %v", err)
		}
		out, err := e.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"yes"` {
			t.Fatalf("%+v %v", out, err)
		}
		ops := durabletest.Of(t, e)
		if op, ok := ops.ByName("one", 0); !ok || op.Status != types.OperationStatusSucceeded || aws.ToString(op.StepDetails.Result) != "1" {
			t.Errorf("step one of the finished branch: %+v %v", op, ok)
		}
		if _, ok := ops.ByName("one", 1); ok {
			t.Error("a second operation named one")
		}
		if op, ok := ops.ByIndex(0); !ok || aws.ToString(op.Name) != "fan" {
			t.Errorf("first operation: %+v", op)
		}
		approve, _ := ops.ByName("approve", 0)
		if kids := ops.Children(aws.ToString(approve.Id)); len(kids) != 2 || kids[0].Type != types.OperationTypeCallback || kids[1].Type != types.OperationTypeStep {
			t.Errorf("children of the WaitForCallback context: %v", kids)
		}
		printed := ops.String()
		for _, want := range []string{`CONTEXT/Parallel "fan" SUCCEEDED`, `    STEP/Step "one" SUCCEEDED`, `  CALLBACK/Callback "" SUCCEEDED`, `result="yes"`} {
			if !strings.Contains(printed, want) {
				t.Errorf("printed tree lacks %q:\n%s", want, printed)
			}
		}
		var exec types.Operation
		for _, op := range e.Operations(t) {
			if op.Type == types.OperationTypeExecution {
				exec = op
			}
		}
		if exec.Status != types.OperationStatusSucceeded {
			t.Errorf("EXECUTION is %s after success, want SUCCEEDED", exec.Status)
		}
	})
}

// TestStartServer starts a checkpoint server of its own: it answers the
// Lambda API (a heartbeat for a callback it never issued is refused by the
// server, not by the client) until the test ends.
func TestStartServer(t *testing.T) {
	t.Parallel()
	endpoint := durabletest.StartServer(t)
	_, err := durabletest.Client(endpoint).SendDurableExecutionCallbackHeartbeat(context.Background(),
		&lambda.SendDurableExecutionCallbackHeartbeatInput{CallbackId: aws.String("no-such-callback")})
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() < 400 {
		t.Errorf("heartbeat of an unknown callback: %v, want the server's refusal", err)
	}
}

// TestElapseTimesOutCallbacks: Elapse lets an hour pass for a callback's
// timeout on both backends (on the server the driver fires it, as Drive
// fires waits), so a test of a long timeout does not wait for it.
func TestElapseTimesOutCallbacks(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h, err := durable.NewHandler(e.API(), func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.WaitForCallback[string](dc, "approve", time.Hour, func(context.Context, string) error { return nil })
		}, durable.Options{Now: e.Now})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		e.Elapse(59 * time.Minute)
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("before the timeout: %+v %v", out, err)
		}
		e.Elapse(2 * time.Minute)
		out, err := e.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != durable.ErrorTypeCallbackTimeout {
			t.Fatalf("after the timeout: %+v %v", out, err)
		}
	})
}
