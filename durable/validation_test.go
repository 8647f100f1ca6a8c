package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestCheckpointValidationMatchesServer sends the same raw checkpoint requests
// to lambdafake and to AWS's checkpoint server and expects the same verdict and
// message from both: the fake's rules are the server's.
func TestCheckpointValidationMatchesServer(t *testing.T) {
	t.Parallel()
	up := func(id string, typ types.OperationType, action types.OperationAction) types.OperationUpdate {
		return types.OperationUpdate{Id: aws.String(id), Name: aws.String(id), Type: typ, Action: action}
	}
	step, wait, ctxOp, cb := types.OperationTypeStep, types.OperationTypeWait, types.OperationTypeContext, types.OperationTypeCallback
	start, succeed, fail, retry := types.OperationActionStart, types.OperationActionSucceed, types.OperationActionFail, types.OperationActionRetry
	cancel := types.OperationActionCancel
	withParent := func(u types.OperationUpdate, p string) types.OperationUpdate { u.ParentId = aws.String(p); return u }
	withPayload := func(u types.OperationUpdate) types.OperationUpdate { u.Payload = aws.String(`"x"`); return u }
	withWait := func(u types.OperationUpdate) types.OperationUpdate {
		u.WaitOptions = &types.WaitOptions{WaitSeconds: aws.Int32(3600)}
		return u
	}
	withError := func(u types.OperationUpdate, n int) types.OperationUpdate {
		u.Error = &types.ErrorObject{ErrorMessage: aws.String(strings.Repeat("e", n))}
		return u
	}
	withRetry := func(u types.OperationUpdate) types.OperationUpdate {
		u.StepOptions = &types.StepOptions{NextAttemptDelaySeconds: aws.Int32(1)}
		return u
	}
	tests := []struct {
		name     string
		requests [][]types.OperationUpdate
		want     string // message of the last request's rejection; "" accepted
	}{
		{"restart a started step", [][]types.OperationUpdate{{up("s", step, start)}, {up("s", step, start)}}, "Invalid current STEP state to start."},
		{"start a pending step", [][]types.OperationUpdate{{up("s", step, start)}, {withRetry(up("s", step, retry))}, {up("s", step, start)}}, "Invalid current STEP state to start."},
		{"succeed without start", [][]types.OperationUpdate{{withPayload(up("s", step, succeed))}}, ""},
		{"start and succeed in one request", [][]types.OperationUpdate{{up("s", step, start), withPayload(up("s", step, succeed))}}, ""},
		{"close a succeeded step", [][]types.OperationUpdate{{withPayload(up("s", step, succeed))}, {up("s", step, fail)}}, "Invalid current STEP state to close."},
		{"retry without options", [][]types.OperationUpdate{{up("s", step, start)}, {up("s", step, retry)}}, "Invalid StepOptions for the given action."},
		{"succeed a wait", [][]types.OperationUpdate{{up("w", wait, succeed)}}, "Invalid action for the given operation type."},
		{"start a wait twice", [][]types.OperationUpdate{{up("w", wait, start)}, {up("w", wait, start)}}, "Cannot start a WAIT that already exists."},
		{"start a callback twice", [][]types.OperationUpdate{{up("c", cb, start)}, {up("c", cb, start)}}, "Cannot start a CALLBACK that already exists."},
		{"cancel a started wait", [][]types.OperationUpdate{{withWait(up("w", wait, start))}, {up("w", wait, cancel)}}, ""},
		{"cancel a cancelled wait", [][]types.OperationUpdate{{withWait(up("w", wait, start))}, {up("w", wait, cancel)}, {up("w", wait, cancel)}}, "Cannot cancel a WAIT that does not exist or has already completed."},
		{"cancel an unknown wait", [][]types.OperationUpdate{{up("w", wait, cancel)}}, "Cannot cancel a WAIT that does not exist or has already completed."},
		{"cancel a step", [][]types.OperationUpdate{{up("s", step, start)}, {up("s", step, cancel)}}, "Invalid action for the given operation type."},
		{"two updates of a wait", [][]types.OperationUpdate{{up("w", wait, start), up("w", wait, cancel)}}, "Cannot update the same operation twice in a single request."},
		{"parent is a step", [][]types.OperationUpdate{{up("s", step, start)}, {withParent(up("k", step, start), "s")}}, "Invalid parent operation id."},
		{"parent unknown", [][]types.OperationUpdate{{withParent(up("k", step, start), "nope")}}, "Invalid parent operation id."},
		{"parent started in the same request", [][]types.OperationUpdate{{up("p", ctxOp, start), withParent(up("k", step, start), "p")}}, ""},
		{"context FAIL with payload", [][]types.OperationUpdate{{up("p", ctxOp, start)}, {withPayload(up("p", ctxOp, fail))}}, "Cannot provide a Payload for FAIL action."},
		// The server measures the update as it came over the wire, fields
		// left out absent: an error object just under 32 KB there is accepted.
		{"error just under the limit", [][]types.OperationUpdate{{up("s", step, start)}, {withError(up("s", step, fail), 32600)}}, ""},
		{"error over the limit", [][]types.OperationUpdate{{up("s", step, start)}, {withError(up("s", step, fail), 32760)}}, "Error object size must be less than 32768 bytes."},
		{"execution not last", [][]types.OperationUpdate{{withPayload(up("x", types.OperationTypeExecution, succeed)), up("s", step, start)}}, "EXECUTION checkpoint must be the last update."},
		{"checkpoint after the execution ended", [][]types.OperationUpdate{{withPayload(up("x", types.OperationTypeExecution, succeed))}, {up("s", step, start)}}, "Invalid checkpoint token"},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			e := b.New(t, json.RawMessage(`{}`), nil)
			in := e.Input(t)
			token := in.CheckpointToken
			var err error
			for i, updates := range tt.requests {
				var out *lambda.CheckpointDurableExecutionOutput
				out, err = e.API().CheckpointDurableExecution(context.Background(), &lambda.CheckpointDurableExecutionInput{
					DurableExecutionArn: aws.String(in.DurableExecutionArn), CheckpointToken: aws.String(token), Updates: updates})
				if i < len(tt.requests)-1 && err != nil {
					t.Fatalf("%s: request %d: %v", tt.name, i+1, err)
				}
				if err == nil {
					token = aws.ToString(out.CheckpointToken)
				}
			}
			var ipv *types.InvalidParameterValueException
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s: rejected: %v", tt.name, err)
			case tt.want != "" && (!errors.As(err, &ipv) || ipv.ErrorMessage() != tt.want):
				t.Errorf("%s: got %v, want InvalidParameterValueException %q", tt.name, err, tt.want)
			}
		}
		// A rejected request records none of its updates.
		e := b.New(t, json.RawMessage(`{}`), nil)
		in := e.Input(t)
		_, err := e.API().CheckpointDurableExecution(context.Background(), &lambda.CheckpointDurableExecutionInput{
			DurableExecutionArn: aws.String(in.DurableExecutionArn), CheckpointToken: aws.String(in.CheckpointToken),
			Updates: []types.OperationUpdate{up("a", step, start), up("w", wait, succeed)}})
		if err == nil {
			t.Fatal("invalid request accepted")
		}
		for _, op := range e.Operations(t) {
			if aws.ToString(op.Id) == "a" {
				t.Errorf("operation a recorded by a rejected request")
			}
		}
	})
}
