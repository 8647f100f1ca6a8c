package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// API is the part of the Lambda client the adapter calls; *lambda.Client
// implements it, and so does the local fake in durable/lambdafake.
type API interface {
	CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error)
	GetDurableExecutionState(ctx context.Context, in *lambda.GetDurableExecutionStateInput, opts ...func(*lambda.Options)) (*lambda.GetDurableExecutionStateOutput, error)
}

// Input is the invocation payload Lambda sends to a durable function.
type Input struct {
	DurableExecutionArn   string         `json:"DurableExecutionArn"`
	CheckpointToken       string         `json:"CheckpointToken"`
	InitialExecutionState ExecutionState `json:"InitialExecutionState"`
}

// ExecutionState is a page of operation history.
type ExecutionState struct {
	Operations []types.Operation `json:"Operations"`
	NextMarker *string           `json:"NextMarker,omitempty"`
}

// Status is the outcome an invocation reports to the service.
type Status string

// Invocation outcomes. PENDING is not a failure: the execution is suspended on a
// wait, a callback or a step retry and the service will invoke again.
const (
	StatusSucceeded Status = "SUCCEEDED"
	StatusFailed    Status = "FAILED"
	StatusPending   Status = "PENDING"
)

// Output is what the handler returns to the service.
type Output struct {
	Status Status             `json:"Status"`
	Result *string            `json:"Result,omitempty"`
	Error  *types.ErrorObject `json:"Error,omitempty"`
}

// Errors.
var (
	// ErrInvalidInput: the invocation payload lacks the ARN or token, or its history
	// contradicts itself. The invocation fails; retrying the same payload cannot help.
	ErrInvalidInput = errors.New("durable: invalid invocation input")
	// ErrNondeterministic: replay met an operation whose recorded type or name
	// differs from what the code asks for at that position.
	ErrNondeterministic = errors.New("durable: workflow code diverged from its history")
	// ErrCheckpoint: a checkpoint or state call failed; the invocation returns the
	// error so Lambda retries it, and the new invocation replays from history.
	ErrCheckpoint = errors.New("durable: checkpoint failed")
)

// OperationError is a step, callback or execution failure recorded in history.
// Replaying a failed step returns it again with the same fields.
type OperationError struct {
	OperationID string
	Name        string
	Type        string
	Message     string
	Data        string
}

func (e *OperationError) Error() string {
	return fmt.Sprintf("durable: operation %s (%s) failed: %s: %s", e.OperationID, e.Name, e.Type, e.Message)
}

// Permanent marks an error a step must not retry.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

// Fatal wraps err so a step fails at once instead of retrying.
func Fatal(err error) error { return &Permanent{Err: err} }

func decodeInput(b []byte) (Input, error) {
	var in Input
	if err := json.Unmarshal(b, &in); err != nil {
		return Input{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return in, nil
}
