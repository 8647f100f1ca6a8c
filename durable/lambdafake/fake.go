// Package lambdafake is a local, in-memory stand-in for the two Lambda durable
// execution APIs the durable adapter calls (CheckpointDurableExecution and
// GetDurableExecutionState) plus the service behaviour around them: checkpoint
// tokens that advance and go stale, operation history, timers, step retry
// scheduling, callbacks, and reinvocation. It models the documented wire
// contract; it is not the service, and README.md lists what it cannot prove.
package lambdafake

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
)

// Fake is one durable execution. It is safe for concurrent use.
type Fake struct {
	mu        sync.Mutex
	arn       string
	now       time.Time
	token     int
	ops       []*types.Operation
	byID      map[string]*types.Operation
	callbacks map[string]string // callback ID -> operation ID
	lastReq   string            // client token of the last applied checkpoint
	lastOut   *lambda.CheckpointDurableExecutionOutput
	// PageSize bounds operations per page of history (invocation input and
	// GetDurableExecutionState); 0 means 100 as the service's default.
	PageSize int
	// FailCheckpoint, when set, is consulted before a checkpoint is applied; a
	// non-nil error is returned and nothing is recorded (a crash or network loss
	// before the checkpoint took effect).
	FailCheckpoint func(in *lambda.CheckpointDurableExecutionInput) error

	// MaxPayloadBytes, when positive, rejects updates whose payload is larger
	// (the service's limit is 1 MB per operation).
	MaxPayloadBytes int

	Checkpoints, StateCalls, Invocations int
}

// New starts an execution of arn with the given input at time start.
func New(arn string, input json.RawMessage, start time.Time) *Fake {
	f := &Fake{arn: arn, now: start, token: 1, byID: map[string]*types.Operation{}, callbacks: map[string]string{}}
	f.add(&types.Operation{Id: aws.String("execution"), Type: types.OperationTypeExecution, Status: types.OperationStatusStarted,
		StartTimestamp: aws.Time(start), ExecutionDetails: &types.ExecutionDetails{InputPayload: aws.String(string(input))}})
	return f
}

func (f *Fake) add(op *types.Operation) { f.ops = append(f.ops, op); f.byID[*op.Id] = op }

// Now is the fake's clock.
func (f *Fake) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *Fake) tok() string { return "token-" + strconv.Itoa(f.token) }

func (f *Fake) pageSize() int {
	if f.PageSize > 0 {
		return f.PageSize
	}
	return 100
}

// Input returns the payload of the next invocation: the current token and the
// first page of history.
func (f *Fake) Input() durable.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops, next := f.page(0)
	return durable.Input{DurableExecutionArn: f.arn, CheckpointToken: f.tok(), InitialExecutionState: durable.ExecutionState{Operations: ops, NextMarker: next}}
}

func (f *Fake) page(from int) ([]types.Operation, *string) {
	end := min(from+f.pageSize(), len(f.ops))
	out := make([]types.Operation, 0, end-from)
	for _, op := range f.ops[from:end] {
		out = append(out, clone(op))
	}
	if end < len(f.ops) {
		return out, aws.String(strconv.Itoa(end))
	}
	return out, nil
}

func clone(op *types.Operation) types.Operation {
	b, _ := json.Marshal(op)
	var c types.Operation
	_ = json.Unmarshal(b, &c)
	return c
}

// Operations returns a copy of the history.
func (f *Fake) Operations() []types.Operation {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]types.Operation, 0, len(f.ops))
	for _, op := range f.ops {
		out = append(out, clone(op))
	}
	return out
}

// GetDurableExecutionState implements durable.API.
func (f *Fake) GetDurableExecutionState(_ context.Context, in *lambda.GetDurableExecutionStateInput, _ ...func(*lambda.Options)) (*lambda.GetDurableExecutionStateOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.StateCalls++
	if aws.ToString(in.DurableExecutionArn) != f.arn {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such durable execution")}
	}
	if aws.ToString(in.CheckpointToken) != f.tok() {
		return nil, &types.InvalidParameterValueException{Message: aws.String("Invalid checkpoint token: stale")}
	}
	from := 0
	if in.Marker != nil {
		n, err := strconv.Atoi(*in.Marker)
		if err != nil || n < 0 || n > len(f.ops) {
			return nil, &types.InvalidParameterValueException{Message: aws.String("bad marker")}
		}
		from = n
	}
	ops, next := f.page(from)
	return &lambda.GetDurableExecutionStateOutput{Operations: ops, NextMarker: next}, nil
}

// CheckpointDurableExecution implements durable.API: it checks the token, applies
// the updates atomically, advances the token and returns the operations changed.
// A request repeating the previous one's client token with the previous token gets
// the previous answer again, as the service deduplicates retries.
func (f *Fake) CheckpointDurableExecution(_ context.Context, in *lambda.CheckpointDurableExecutionInput, _ ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if aws.ToString(in.DurableExecutionArn) != f.arn {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such durable execution")}
	}
	if ct := aws.ToString(in.ClientToken); ct != "" && ct == f.lastReq && aws.ToString(in.CheckpointToken) == "token-"+strconv.Itoa(f.token-1) {
		return f.lastOut, nil
	}
	if aws.ToString(in.CheckpointToken) != f.tok() {
		return nil, &types.InvalidParameterValueException{Message: aws.String("Invalid checkpoint token: stale")}
	}
	if f.FailCheckpoint != nil {
		if err := f.FailCheckpoint(in); err != nil {
			return nil, err
		}
	}
	if f.MaxPayloadBytes > 0 {
		for _, u := range in.Updates {
			if n := len(aws.ToString(u.Payload)); n > f.MaxPayloadBytes {
				return nil, invalid("payload of operation %s is %d bytes, limit %d", aws.ToString(u.Id), n, f.MaxPayloadBytes)
			}
		}
	}
	changed := map[string]bool{}
	for _, u := range in.Updates {
		if err := f.apply(u); err != nil {
			return nil, err
		}
		changed[aws.ToString(u.Id)] = true
	}
	f.Checkpoints++
	f.token++
	var ops []types.Operation
	for _, op := range f.ops {
		if changed[*op.Id] {
			ops = append(ops, clone(op))
		}
	}
	f.lastReq, f.lastOut = aws.ToString(in.ClientToken), &lambda.CheckpointDurableExecutionOutput{
		CheckpointToken: aws.String(f.tok()), NewExecutionState: &types.CheckpointUpdatedExecutionState{Operations: ops}}
	return f.lastOut, nil
}

func invalid(format string, args ...any) error {
	return &types.InvalidParameterValueException{Message: aws.String(fmt.Sprintf(format, args...))}
}

func (f *Fake) apply(u types.OperationUpdate) error {
	id := aws.ToString(u.Id)
	if id == "" {
		return invalid("update without Id")
	}
	op := f.byID[id]
	if op != nil && op.Type != u.Type {
		return invalid("operation %s is %s, update says %s", id, op.Type, u.Type)
	}
	switch u.Action {
	case types.OperationActionStart:
		if op == nil {
			op = &types.Operation{Id: aws.String(id), Name: u.Name, ParentId: u.ParentId, Type: u.Type, StartTimestamp: aws.Time(f.now)}
			f.add(op)
		} else if op.Status != types.OperationStatusReady && op.Status != types.OperationStatusPending && op.Status != types.OperationStatusStarted {
			return invalid("operation %s cannot start from %s", id, op.Status)
		}
		op.Status = types.OperationStatusStarted
		switch u.Type {
		case types.OperationTypeStep:
			if op.StepDetails == nil {
				op.StepDetails = &types.StepDetails{}
			}
			op.StepDetails.Attempt++
			op.StepDetails.NextAttemptTimestamp = nil
		case types.OperationTypeWait:
			secs := int32(0)
			if u.WaitOptions != nil {
				secs = aws.ToInt32(u.WaitOptions.WaitSeconds)
			}
			op.WaitDetails = &types.WaitDetails{ScheduledEndTimestamp: aws.Time(f.now.Add(time.Duration(secs) * time.Second))}
		case types.OperationTypeCallback:
			cb := "cb-" + id + "-" + strconv.Itoa(f.token)
			op.CallbackDetails = &types.CallbackDetails{CallbackId: aws.String(cb)}
			f.callbacks[cb] = id
			if u.CallbackOptions != nil && u.CallbackOptions.TimeoutSeconds > 0 {
				end := f.now.Add(time.Duration(u.CallbackOptions.TimeoutSeconds) * time.Second)
				op.EndTimestamp = &end // the fake keeps the deadline here until it ends
			}
		}
	case types.OperationActionSucceed, types.OperationActionFail:
		if op == nil || op.Status != types.OperationStatusStarted {
			return invalid("operation %s is not started", id)
		}
		op.Status = types.OperationStatusSucceeded
		if u.Action == types.OperationActionFail {
			op.Status = types.OperationStatusFailed
		}
		op.EndTimestamp = aws.Time(f.now)
		if u.Type == types.OperationTypeStep {
			op.StepDetails.Result, op.StepDetails.Error = u.Payload, u.Error
		}
	case types.OperationActionRetry:
		if op == nil || op.Status != types.OperationStatusStarted || u.Type != types.OperationTypeStep {
			return invalid("operation %s cannot retry", id)
		}
		delay := int32(1)
		if u.StepOptions != nil && u.StepOptions.NextAttemptDelaySeconds != nil {
			delay = *u.StepOptions.NextAttemptDelaySeconds
		}
		op.Status = types.OperationStatusPending
		op.StepDetails.Error = u.Error
		op.StepDetails.NextAttemptTimestamp = aws.Time(f.now.Add(time.Duration(delay) * time.Second))
	default:
		return invalid("unsupported action %s", u.Action)
	}
	return nil
}

// CompleteCallback records an answer to a callback, as SendDurableExecutionCallbackSuccess would.
func (f *Fake) CompleteCallback(callbackID, result string) error {
	return f.endCallback(callbackID, types.OperationStatusSucceeded, &result, nil)
}

// FailCallback records a failure of a callback.
func (f *Fake) FailCallback(callbackID, message string) error {
	return f.endCallback(callbackID, types.OperationStatusFailed, nil, &types.ErrorObject{ErrorType: aws.String("CallbackFailed"), ErrorMessage: aws.String(message)})
}

func (f *Fake) endCallback(cb string, st types.OperationStatus, result *string, e *types.ErrorObject) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := f.byID[f.callbacks[cb]]
	if op == nil {
		return &types.ResourceNotFoundException{Message: aws.String("unknown callback " + cb)}
	}
	if op.Status != types.OperationStatusStarted {
		return invalid("callback %s already %s", cb, op.Status) // a late or repeated answer
	}
	op.Status, op.EndTimestamp = st, aws.Time(f.now)
	op.CallbackDetails.Result, op.CallbackDetails.Error = result, e
	return nil
}

// Advance moves the clock and fires what became due: waits succeed, pending step
// retries become READY, callbacks past their timeout time out.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	for _, op := range f.ops {
		switch {
		case op.Type == types.OperationTypeWait && op.Status == types.OperationStatusStarted && !op.WaitDetails.ScheduledEndTimestamp.After(f.now):
			op.Status, op.EndTimestamp = types.OperationStatusSucceeded, aws.Time(f.now)
		case op.Type == types.OperationTypeStep && op.Status == types.OperationStatusPending && !op.StepDetails.NextAttemptTimestamp.After(f.now):
			op.Status = types.OperationStatusReady
		case op.Type == types.OperationTypeCallback && op.Status == types.OperationStatusStarted && op.EndTimestamp != nil && !op.EndTimestamp.After(f.now):
			op.Status = types.OperationStatusTimedOut
		}
	}
}

// NextWake returns the earliest time a wait or a step retry becomes due. Callback
// timeouts are left out: a test decides whether an answer or the timeout comes
// first, by CompleteCallback or by Advance.
func (f *Fake) NextWake() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var times []time.Time
	for _, op := range f.ops {
		switch {
		case op.Type == types.OperationTypeWait && op.Status == types.OperationStatusStarted:
			times = append(times, *op.WaitDetails.ScheduledEndTimestamp)
		case op.Type == types.OperationTypeStep && op.Status == types.OperationStatusPending:
			times = append(times, *op.StepDetails.NextAttemptTimestamp)
		}
	}
	if len(times) == 0 {
		return time.Time{}, false
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[0], true
}

// Invoker is what Drive calls; *durable.Handler implements it.
type Invoker interface {
	Handle(ctx context.Context, in durable.Input) (durable.Output, error)
}

// Drive plays the service: it invokes h, and while the output is PENDING and
// something is scheduled it advances the clock to it and invokes again. It stops
// at a final status, at a PENDING execution waiting only for a callback,
// at an invocation error (returned), or after max invocations.
func (f *Fake) Drive(ctx context.Context, h Invoker, max int) (durable.Output, error) {
	for i := 0; i < max; i++ {
		f.mu.Lock()
		f.Invocations++
		f.mu.Unlock()
		out, err := h.Handle(ctx, f.Input())
		if err != nil || out.Status != durable.StatusPending {
			return out, err
		}
		at, ok := f.NextWake()
		if !ok {
			return out, nil
		}
		if d := at.Sub(f.Now()); d > 0 {
			f.Advance(d)
		} else {
			f.Advance(0)
		}
	}
	return durable.Output{}, fmt.Errorf("lambdafake: still pending after %d invocations", max)
}
