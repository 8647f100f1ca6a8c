// Package lambdafake is a local, in-memory stand-in for the two Lambda durable
// execution APIs the durable adapter calls (CheckpointDurableExecution and
// GetDurableExecutionState) plus the service behaviour around them: checkpoint
// tokens that advance and go stale, operation history, timers, step retry
// scheduling, callbacks, and reinvocation. Its validation rules and error
// messages are those of AWS's local checkpoint server, against which the durable
// tests also run; where that server is laxer than the service (stale tokens,
// client-token deduplication, paging, late callback answers) the fake keeps the
// service's rule. It is not the service: README.md lists what it cannot prove.
package lambdafake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	// callback timers, by operation ID
	deadlines, heartbeatDue map[string]time.Time
	heartbeat               map[string]time.Duration
	invokes                 map[string]invoke
	result                  *string            // the execution's result, once checkpointed
	execErr                 *types.ErrorObject // the execution's error, once settled FAILED
	done                    bool
	// Invoke, when set, plays the functions started by durable.Invoke: Advance
	// completes a started CHAINED_INVOKE with its result or failure.
	Invoke  func(op types.Operation) (string, error)
	lastReq string // client token of the last applied checkpoint
	lastOut *lambda.CheckpointDurableExecutionOutput
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
	f := &Fake{arn: arn, now: start, token: 1, byID: map[string]*types.Operation{}, callbacks: map[string]string{},
		deadlines: map[string]time.Time{}, heartbeatDue: map[string]time.Time{}, heartbeat: map[string]time.Duration{}, invokes: map[string]invoke{}}
	f.add(&types.Operation{Id: aws.String("execution"), Type: types.OperationTypeExecution, Status: types.OperationStatusStarted,
		StartTimestamp: aws.Time(start), ExecutionDetails: &types.ExecutionDetails{InputPayload: aws.String(string(input))}})
	return f
}

type invoke struct{ function, payload string }

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
	ops := f.visible()
	from = min(from, len(ops))
	end := min(from+f.pageSize(), len(ops))
	out := make([]types.Operation, 0, end-from)
	for _, op := range ops[from:end] {
		out = append(out, clone(op))
	}
	if end < len(ops) {
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

// Operations returns a copy of the history: every operation the execution
// recorded, the children of finished contexts included, which State leaves out
// as the service does.
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
	if f.done {
		return nil, invalid("Invalid checkpoint token") // the execution has ended
	}
	if err := f.validate(in.Updates); err != nil {
		return nil, err
	}
	changed := map[string]bool{}
	for _, u := range in.Updates {
		f.apply(u)
		id := aws.ToString(u.Id)
		if u.Type == types.OperationTypeExecution {
			id = "execution"
		}
		changed[id] = true
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

// Actions each operation type accepts, as AWS's checkpoint server validates them.
var validActions = map[types.OperationType][]types.OperationAction{
	types.OperationTypeStep:          {types.OperationActionStart, types.OperationActionFail, types.OperationActionRetry, types.OperationActionSucceed},
	types.OperationTypeContext:       {types.OperationActionStart, types.OperationActionFail, types.OperationActionSucceed},
	types.OperationTypeWait:          {types.OperationActionStart, types.OperationActionCancel},
	types.OperationTypeCallback:      {types.OperationActionStart, types.OperationActionCancel},
	types.OperationTypeChainedInvoke: {types.OperationActionStart, types.OperationActionCancel},
	types.OperationTypeExecution:     {types.OperationActionSucceed, types.OperationActionFail},
}

// maxErrorBytes bounds an update carrying an Error, as the service does (32 KB).
const maxErrorBytes = 32768

// validate checks a whole request before any of it is applied, with the rules
// and messages of AWS's local checkpoint server.
func (f *Fake) validate(updates []types.OperationUpdate) error {
	execs := 0
	for _, u := range updates {
		if u.Type == types.OperationTypeExecution {
			execs++
		}
	}
	if execs > 1 {
		return invalid("Cannot checkpoint multiple EXECUTION updates.")
	}
	if execs == 1 && updates[len(updates)-1].Type != types.OperationTypeExecution {
		return invalid("EXECUTION checkpoint must be the last update.")
	}
	started := map[string]types.OperationUpdate{}
	last := map[string]types.OperationUpdate{}
	for _, u := range updates {
		id := aws.ToString(u.Id)
		if id == "" {
			return invalid("Operation update must have an Id.")
		}
		if prev, ok := last[id]; ok {
			allowed := (prev.Type == types.OperationTypeStep || prev.Type == types.OperationTypeContext) &&
				prev.Action == types.OperationActionStart && u.Action != types.OperationActionStart
			if !allowed {
				return invalid("Cannot update the same operation twice in a single request.")
			}
		}
		if p := aws.ToString(u.ParentId); p != "" {
			parentType := types.OperationType("")
			if s, ok := started[p]; ok {
				parentType = s.Type
			} else if op := f.byID[p]; op != nil {
				parentType = op.Type
			}
			if parentType != types.OperationTypeContext {
				return invalid("Invalid parent operation id.")
			}
		}
		if u.Action == types.OperationActionStart {
			started[id] = u
		}
		last[id] = u
	}
	for _, u := range updates {
		if u.Error != nil {
			if wireSize(u) > maxErrorBytes {
				return invalid("Error object size must be less than %d bytes.", maxErrorBytes)
			}
		}
		if f.MaxPayloadBytes > 0 {
			if n := len(aws.ToString(u.Payload)); n > f.MaxPayloadBytes {
				return invalid("payload of operation %s is %d bytes, limit %d", aws.ToString(u.Id), n, f.MaxPayloadBytes)
			}
		}
		acts, ok := validActions[u.Type]
		if !ok {
			return invalid("Unknown operation type.")
		}
		if !slices.Contains(acts, u.Action) {
			return invalid("Invalid action for the given operation type.")
		}
		if err := validTransition(u, f.byID[aws.ToString(u.Id)]); err != nil {
			return err
		}
	}
	return nil
}

// wireSize is the length of u's JSON as the server measures it: the update as
// it arrived, so without the members the request left out. encoding/json
// writes every nil member of the SDK struct as null, which made the fake
// refuse error objects the server accepts.
func wireSize(u types.OperationUpdate) int {
	b, _ := json.Marshal(u)
	var v any
	if json.Unmarshal(b, &v) != nil {
		return len(b)
	}
	b, _ = json.Marshal(dropNulls(v))
	return len(b)
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropNulls(e)
		}
	}
	return v
}

func validTransition(u types.OperationUpdate, op *types.Operation) error {
	status := func(allowed ...types.OperationStatus) bool { return op != nil && slices.Contains(allowed, op.Status) }
	fail, succeed := u.Action == types.OperationActionFail, u.Action == types.OperationActionSucceed
	switch u.Type {
	case types.OperationTypeStep:
		switch u.Action {
		case types.OperationActionStart:
			// A STARTED step is never re-started: the next attempt of an interrupted
			// at-least-once step checkpoints only its outcome.
			if op != nil && !status(types.OperationStatusReady) {
				return invalid("Invalid current STEP state to start.")
			}
		case types.OperationActionFail, types.OperationActionSucceed:
			if op != nil && !status(types.OperationStatusStarted, types.OperationStatusReady) {
				return invalid("Invalid current STEP state to close.")
			}
		case types.OperationActionRetry:
			if op != nil && !status(types.OperationStatusStarted, types.OperationStatusReady) {
				return invalid("Invalid current STEP state to re-attempt.")
			}
			if u.StepOptions == nil {
				return invalid("Invalid StepOptions for the given action.")
			}
			if u.Error != nil && u.Payload != nil {
				return invalid("Cannot provide both error and payload to RETRY a STEP.")
			}
		}
	case types.OperationTypeContext:
		if u.Action == types.OperationActionStart && op != nil {
			return invalid("Cannot start a CONTEXT that already exists.")
		}
		if (fail || succeed) && op != nil && !status(types.OperationStatusStarted) {
			return invalid("Invalid current CONTEXT state to close.")
		}
	case types.OperationTypeWait, types.OperationTypeCallback, types.OperationTypeChainedInvoke:
		if u.Action == types.OperationActionStart && op != nil {
			return invalid("Cannot start a %s that already exists.", u.Type)
		}
		if u.Action == types.OperationActionCancel && !status(types.OperationStatusStarted) {
			return invalid("Cannot cancel a %s that does not exist or has already completed.", u.Type)
		}
	}
	if fail && u.Payload != nil {
		return invalid("Cannot provide a Payload for FAIL action.")
	}
	if succeed && u.Error != nil {
		return invalid("Cannot provide an Error for SUCCEED action.")
	}
	return nil
}

func (f *Fake) apply(u types.OperationUpdate) {
	id := aws.ToString(u.Id)
	if u.Type == types.OperationTypeExecution {
		// An EXECUTION update always means the execution itself, whatever its Id.
		id = "execution"
	}
	op := f.byID[id]
	if op == nil {
		op = &types.Operation{Id: aws.String(id), Name: u.Name, ParentId: u.ParentId, SubType: u.SubType, Type: u.Type,
			StartTimestamp: aws.Time(f.now), Status: types.OperationStatusStarted}
		f.add(op)
		switch u.Type {
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
			if o := u.CallbackOptions; o != nil {
				if o.TimeoutSeconds > 0 {
					f.deadlines[id] = f.now.Add(time.Duration(o.TimeoutSeconds) * time.Second)
				}
				if o.HeartbeatTimeoutSeconds > 0 {
					f.heartbeat[id] = time.Duration(o.HeartbeatTimeoutSeconds) * time.Second
					f.heartbeatDue[id] = f.now.Add(f.heartbeat[id])
				}
			}
		case types.OperationTypeChainedInvoke:
			op.ChainedInvokeDetails = &types.ChainedInvokeDetails{}
			if u.ChainedInvokeOptions != nil {
				f.invokes[id] = invoke{function: aws.ToString(u.ChainedInvokeOptions.FunctionName), payload: aws.ToString(u.Payload)}
			}
		case types.OperationTypeContext:
			op.ContextDetails = &types.ContextDetails{}
			if u.ContextOptions != nil {
				op.ContextDetails.ReplayChildren = u.ContextOptions.ReplayChildren
			}
		}
		if u.Action == types.OperationActionStart {
			return
		}
	}
	switch u.Action {
	case types.OperationActionStart: // a READY step's next attempt
		op.Status = types.OperationStatusStarted
		op.StepDetails.NextAttemptTimestamp = nil
	case types.OperationActionSucceed, types.OperationActionFail:
		op.Status = types.OperationStatusSucceeded
		if u.Action == types.OperationActionFail {
			op.Status = types.OperationStatusFailed
		}
		op.EndTimestamp = aws.Time(f.now)
		switch u.Type {
		case types.OperationTypeStep:
			if op.StepDetails == nil {
				op.StepDetails = &types.StepDetails{}
			}
			// The service counts finished attempts.
			op.StepDetails.Attempt++
			op.StepDetails.Result, op.StepDetails.Error = u.Payload, u.Error
		case types.OperationTypeContext:
			op.ContextDetails.Result, op.ContextDetails.Error = u.Payload, u.Error
			// As the checkpoint server does: a SUCCEED or FAIL may set
			// ReplayChildren (the JS SDK and the durable adapter set it there, once
			// they know the result is too large); absent, the START's value stays.
			if u.ContextOptions != nil && u.ContextOptions.ReplayChildren != nil {
				op.ContextDetails.ReplayChildren = u.ContextOptions.ReplayChildren
			}
		case types.OperationTypeExecution:
			f.result, f.done = u.Payload, true
		}
	case types.OperationActionRetry:
		delay := int32(1)
		if u.StepOptions != nil && u.StepOptions.NextAttemptDelaySeconds != nil {
			delay = *u.StepOptions.NextAttemptDelaySeconds
		}
		if op.StepDetails == nil {
			op.StepDetails = &types.StepDetails{}
		}
		op.Status = types.OperationStatusPending
		op.StepDetails.Attempt++
		op.StepDetails.Result, op.StepDetails.Error = u.Payload, u.Error
		op.StepDetails.NextAttemptTimestamp = aws.Time(f.now.Add(time.Duration(delay) * time.Second))
	case types.OperationActionCancel:
		op.Status, op.EndTimestamp = types.OperationStatusCancelled, aws.Time(f.now)
	}
}

// CompleteCallback records an answer to a callback, as SendDurableExecutionCallbackSuccess would.
func (f *Fake) CompleteCallback(callbackID, result string) error {
	var r *string
	if result != "" {
		r = &result
	}
	return f.endCallback(callbackID, types.OperationStatusSucceeded, r, nil)
}

// FailCallback records a failure of a callback.
func (f *Fake) FailCallback(callbackID, message string) error {
	return f.endCallback(callbackID, types.OperationStatusFailed, nil, &types.ErrorObject{ErrorType: aws.String("CallbackFailed"), ErrorMessage: aws.String(message)})
}

// HeartbeatCallback restarts a callback's heartbeat timeout, as
// SendDurableExecutionCallbackHeartbeat would.
func (f *Fake) HeartbeatCallback(callbackID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.callbacks[callbackID]
	op := f.byID[id]
	if op == nil || op.Status != types.OperationStatusStarted {
		return &types.ResourceNotFoundException{Message: aws.String("Execution not found")}
	}
	hb, ok := f.heartbeat[id]
	if !ok {
		return invalid("Could not find callback that requires heartbeat")
	}
	f.heartbeatDue[id] = f.now.Add(hb)
	return nil
}

func (f *Fake) endCallback(cb string, st types.OperationStatus, result *string, e *types.ErrorObject) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.callbacks[cb]
	if !ok {
		return &types.ResourceNotFoundException{Message: aws.String("Execution not found")}
	}
	op := f.byID[id]
	if op.Status != types.OperationStatusStarted {
		return invalid("callback %s already %s", cb, op.Status) // a late or repeated answer
	}
	f.finishCallback(op, st, result, e)
	return nil
}

func (f *Fake) finishCallback(op *types.Operation, st types.OperationStatus, result *string, e *types.ErrorObject) {
	op.Status, op.EndTimestamp = st, aws.Time(f.now)
	op.CallbackDetails.Result, op.CallbackDetails.Error = result, e
	delete(f.deadlines, *op.Id)
	delete(f.heartbeatDue, *op.Id)
}

// Advance moves the clock and fires what became due: waits succeed, pending step
// retries become READY, callbacks past their timeout or heartbeat timeout time
// out, and started chained invokes are completed by Invoke.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	for _, op := range f.ops {
		id := *op.Id
		switch {
		case op.Type == types.OperationTypeWait && op.Status == types.OperationStatusStarted && !op.WaitDetails.ScheduledEndTimestamp.After(f.now):
			op.Status, op.EndTimestamp = types.OperationStatusSucceeded, aws.Time(f.now)
		case op.Type == types.OperationTypeStep && op.Status == types.OperationStatusPending && !op.StepDetails.NextAttemptTimestamp.After(f.now):
			op.Status = types.OperationStatusReady
		case op.Type == types.OperationTypeCallback && op.Status == types.OperationStatusStarted:
			if t, ok := f.deadlines[id]; ok && !t.After(f.now) {
				f.finishCallback(op, types.OperationStatusTimedOut, nil, &types.ErrorObject{ErrorMessage: aws.String("Callback timed out")})
			} else if t, ok := f.heartbeatDue[id]; ok && !t.After(f.now) {
				f.finishCallback(op, types.OperationStatusTimedOut, nil, &types.ErrorObject{ErrorMessage: aws.String("Callback timed out on heartbeat")})
			}
		case op.Type == types.OperationTypeChainedInvoke && op.Status == types.OperationStatusStarted && f.Invoke != nil:
			res, err := f.Invoke(clone(op))
			op.EndTimestamp = aws.Time(f.now)
			if err != nil {
				op.Status = types.OperationStatusFailed
				op.ChainedInvokeDetails.Error = &types.ErrorObject{ErrorType: aws.String("InvokeError"), ErrorMessage: aws.String(err.Error())}
			} else {
				op.Status = types.OperationStatusSucceeded
				op.ChainedInvokeDetails.Result = aws.String(res)
			}
		}
	}
}

// Invocation of a chained invoke: the function name and payload the START carried.
func (f *Fake) InvokeInput(operationID string) (function, payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.invokes[operationID]
	return in.function, in.payload
}

// Result returns the result the execution checkpointed with its EXECUTION
// SUCCEED (the path of results too large for the invocation response).
func (f *Fake) Result() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return aws.ToString(f.result), f.result != nil
}

// State returns the operations GetDurableExecutionState reports: every
// operation except the descendants of a finished child context that does not
// ask for its children to be replayed.
func (f *Fake) State() []types.Operation {
	f.mu.Lock()
	defer f.mu.Unlock()
	visible := f.visible()
	out := make([]types.Operation, 0, len(visible))
	for _, op := range visible {
		out = append(out, clone(op))
	}
	return out
}

func (f *Fake) visible() []*types.Operation {
	excluded := map[string]bool{}
	var out []*types.Operation
	for _, op := range f.ops {
		if p := aws.ToString(op.ParentId); p != "" {
			parent := f.byID[p]
			if parent != nil && parent.Type == types.OperationTypeContext &&
				(parent.Status == types.OperationStatusSucceeded || parent.Status == types.OperationStatusFailed) &&
				(parent.ContextDetails == nil || !aws.ToBool(parent.ContextDetails.ReplayChildren) || excluded[p]) {
				excluded[*op.Id] = true
				continue
			}
		}
		out = append(out, op)
	}
	return out
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
		case op.Type == types.OperationTypeChainedInvoke && op.Status == types.OperationStatusStarted && f.Invoke != nil:
			times = append(times, f.now)
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
// Settle ends the EXECUTION operation with the outcome the handler
// returned, as the service does when an invocation reports SUCCEEDED or
// FAILED: its status, end time, and the result (unless the execution
// checkpointed one itself) or error. Drive calls it; a test that calls
// Handle directly calls it to see the execution end. A PENDING output
// changes nothing.
func (f *Fake) Settle(out durable.Output) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := f.byID["execution"]
	switch out.Status {
	case durable.StatusSucceeded:
		op.Status = types.OperationStatusSucceeded
		if f.result == nil {
			f.result = out.Result
		}
	case durable.StatusFailed:
		op.Status = types.OperationStatusFailed
		f.execErr = out.Error
	default:
		return
	}
	op.EndTimestamp = aws.Time(f.now)
	f.done = true
}

// Error returns the error the execution failed with (Settle records it).
func (f *Fake) Error() (*types.ErrorObject, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execErr, f.execErr != nil
}

func (f *Fake) Drive(ctx context.Context, h Invoker, max int) (durable.Output, error) {
	for i := 0; i < max; i++ {
		f.mu.Lock()
		f.Invocations++
		f.mu.Unlock()
		out, err := h.Handle(ctx, f.Input())
		if err == nil && out.Status != durable.StatusPending {
			f.Settle(out)
		}
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
