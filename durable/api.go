package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

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

// Permanent marks an error a step must not retry.
type Permanent struct{ Err error }

func (p *Permanent) Error() string { return p.Err.Error() }
func (p *Permanent) Unwrap() error { return p.Err }

// Fatal wraps err so a step fails at once instead of retrying.
func Fatal(err error) error { return &Permanent{Err: err} }

// DecodeInput reads an invocation payload as the service sends it (PascalCase
// members, timestamps as epoch seconds or RFC 3339).
func DecodeInput(b []byte) (Input, error) { return decodeInput(b) }

func decodeInput(b []byte) (Input, error) {
	var wire struct {
		DurableExecutionArn   string
		CheckpointToken       string
		InitialExecutionState struct {
			Operations []map[string]any
			NextMarker *string
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&wire); err != nil {
		return Input{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	in := Input{DurableExecutionArn: wire.DurableExecutionArn, CheckpointToken: wire.CheckpointToken}
	in.InitialExecutionState.NextMarker = wire.InitialExecutionState.NextMarker
	for i, raw := range wire.InitialExecutionState.Operations {
		op, err := decodeOperation(raw)
		if err != nil {
			return Input{}, fmt.Errorf("%w: operation %d: %v", ErrInvalidInput, i, err)
		}
		in.InitialExecutionState.Operations = append(in.InitialExecutionState.Operations, op)
	}
	return in, nil
}

// decodeOperation reads an Operation of the invocation payload. The payload
// carries timestamps as epoch numbers (the AWS JSON convention: seconds, possibly
// fractional; values too large to be seconds are read as milliseconds), while
// types.Operation's time fields decode only RFC 3339 with encoding/json; both are
// accepted.
func decodeOperation(raw map[string]any) (types.Operation, error) {
	fix := func(m map[string]any, key string) error {
		n, ok := m[key].(json.Number)
		if !ok {
			return nil
		}
		f, err := n.Float64()
		if err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		var t time.Time
		if math.Abs(f) >= 1e11 {
			t = time.UnixMilli(int64(f))
		} else {
			sec, frac := math.Modf(f)
			t = time.Unix(int64(sec), int64(frac*1e9))
		}
		m[key] = t.UTC().Format(time.RFC3339Nano)
		return nil
	}
	for _, key := range []string{"StartTimestamp", "EndTimestamp"} {
		if err := fix(raw, key); err != nil {
			return types.Operation{}, err
		}
	}
	for details, key := range map[string]string{"StepDetails": "NextAttemptTimestamp", "WaitDetails": "ScheduledEndTimestamp"} {
		if m, ok := raw[details].(map[string]any); ok {
			if err := fix(m, key); err != nil {
				return types.Operation{}, err
			}
		}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return types.Operation{}, err
	}
	var op types.Operation
	if err := json.Unmarshal(b, &op); err != nil {
		return types.Operation{}, err
	}
	return op, nil
}
