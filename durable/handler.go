package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/checkpoint"
)

// Func is the durable function: it receives the execution's input and returns
// its result. It is replayed from the top on every invocation, so everything with
// a side effect, a clock or randomness belongs in a [Step].
type Func func(ctx context.Context, dc *Context, input json.RawMessage) (any, error)

// Options configure a [Handler]. The zero value is valid.
type Options struct {
	// Codec encodes step results into checkpoint payloads; nil: checkpoint defaults.
	Codec *checkpoint.Codec
	// Logger receives the records of [Context.Logger]; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// MaxAttempts bounds step attempts; 0 means 3.
	MaxAttempts int
	// Backoff is the delay before attempt n+1 after attempt n failed; nil: 1s, 2s, 4s, …
	Backoff func(attempt int) time.Duration
}

// Handler runs a [Func] against the durable execution service.
type Handler struct {
	api  API
	fn   Func
	opts Options
}

// NewHandler validates its arguments; it does not contact the service.
func NewHandler(api API, fn Func, opts Options) (*Handler, error) {
	if api == nil {
		return nil, fmt.Errorf("%w: API is nil", ErrInvalidInput)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: Func is nil", ErrInvalidInput)
	}
	if opts.MaxAttempts < 0 {
		return nil, fmt.Errorf("%w: Options.MaxAttempts %d is negative", ErrInvalidInput, opts.MaxAttempts)
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = 3
	}
	if opts.Codec == nil {
		c, err := checkpoint.New(checkpoint.Options{})
		if err != nil {
			return nil, err
		}
		opts.Codec = c
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Backoff == nil {
		opts.Backoff = func(n int) time.Duration { return time.Second << min(n-1, 20) }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{api: api, fn: fn, opts: opts}, nil
}

// Invoke decodes a raw invocation payload, runs [Handler.Handle] and encodes the
// output: the shape lambda.Start expects of a func(context.Context, json.RawMessage).
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (Output, error) {
	in, err := decodeInput(payload)
	if err != nil {
		return Output{}, err
	}
	return h.Handle(ctx, in)
}

// suspend unwinds the durable function when it cannot progress in this invocation.
type suspend struct{}

// abort unwinds it when the invocation itself must fail (checkpoint error, divergence).
type abort struct {
	err      error
	terminal bool // report FAILED instead of an invocation error
}

// Handle runs one invocation. It returns SUCCEEDED or FAILED when the function
// returned, PENDING when it is suspended, and an error (so Lambda retries the
// invocation) when the service could not be reached, the history is inconsistent,
// or ctx ended: an invocation timeout is not a business failure.
func (h *Handler) Handle(ctx context.Context, in Input) (out Output, err error) {
	if in.DurableExecutionArn == "" || in.CheckpointToken == "" {
		return Output{}, fmt.Errorf("%w: DurableExecutionArn and CheckpointToken are required", ErrInvalidInput)
	}
	dc := &Context{h: h, ctx: ctx, arn: in.DurableExecutionArn, token: in.CheckpointToken, ops: map[string]*types.Operation{}}
	if err := dc.load(ctx, in.InitialExecutionState); err != nil {
		return Output{}, err
	}
	var input json.RawMessage
	found := false
	for _, op := range dc.ops {
		if op.Type == types.OperationTypeExecution {
			found = true
			if op.ExecutionDetails != nil && op.ExecutionDetails.InputPayload != nil {
				input = json.RawMessage(*op.ExecutionDetails.InputPayload)
			}
		}
	}
	if !found {
		return Output{}, fmt.Errorf("%w: history has no EXECUTION operation", ErrInvalidInput)
	}
	for id, op := range dc.ops {
		if op.Type != types.OperationTypeExecution {
			dc.history[id] = true
		}
	}
	dc.replaying = len(dc.history) > 0
	dc.logger = slog.New(&replayHandler{inner: h.opts.Logger.Handler(), dc: dc}).With(slog.String("durable.execution_arn", dc.arn))

	defer func() {
		switch p := recover().(type) {
		case nil:
		case suspend:
			out, err = Output{Status: StatusPending}, nil
		case abort:
			if errors.Is(p.err, ErrNondeterministic) {
				// A divergence is terminal: replaying the same code again cannot help.
				out, err = Output{Status: StatusFailed, Error: &types.ErrorObject{ErrorType: aws.String("durable.Nondeterministic"), ErrorMessage: aws.String(p.err.Error())}}, nil
				return
			}
			if p.terminal {
				out, err = Output{Status: StatusFailed, Error: &types.ErrorObject{ErrorType: aws.String("durable.CheckpointRejected"), ErrorMessage: aws.String(p.err.Error())}}, nil
				return
			}
			out, err = Output{}, p.err
		default:
			panic(p)
		}
	}()
	result, ferr := h.fn(withInfo(ctx, Info{ExecutionArn: dc.arn, Replaying: dc.replaying}), dc, input)
	if ferr != nil {
		if ctx.Err() != nil && errors.Is(ferr, ctx.Err()) {
			return Output{}, ferr
		}
		return Output{Status: StatusFailed, Error: errorObject(ferr)}, nil
	}
	b, merr := json.Marshal(result)
	if merr != nil {
		return Output{Status: StatusFailed, Error: errorObject(merr)}, nil
	}
	return Output{Status: StatusSucceeded, Result: aws.String(string(b))}, nil
}

// Context is the durable function's handle on its execution for one invocation.
// It is not safe for concurrent use: operations are issued in program order,
// which is what makes their IDs deterministic.
type Context struct {
	h         *Handler
	ctx       context.Context
	arn       string
	token     string
	ops       map[string]*types.Operation
	history   map[string]bool // operation IDs present when the invocation began
	visited   int
	counter   int
	replaying bool
	logger    *slog.Logger
}

// ExecutionArn is the durable execution's ARN.
func (dc *Context) ExecutionArn() string { return dc.arn }

// Replaying reports whether the function is still re-executing operations that
// history already holds.
func (dc *Context) Replaying() bool { return dc.replaying }

// Logger returns a logger that drops records while the function replays, so a
// line logged before a completed step appears once, not once per invocation.
func (dc *Context) Logger() *slog.Logger { return dc.logger }

func (dc *Context) load(ctx context.Context, st ExecutionState) error {
	if dc.history == nil {
		dc.history = map[string]bool{}
	}
	dc.merge(st.Operations)
	marker := st.NextMarker
	for marker != nil && *marker != "" {
		out, err := dc.h.api.GetDurableExecutionState(ctx, &lambda.GetDurableExecutionStateInput{
			DurableExecutionArn: aws.String(dc.arn), CheckpointToken: aws.String(dc.token), Marker: marker})
		if err != nil {
			return fmt.Errorf("%w: GetDurableExecutionState: %w", ErrCheckpoint, err)
		}
		dc.merge(out.Operations)
		marker = out.NextMarker
	}
	return nil
}

func (dc *Context) merge(ops []types.Operation) {
	for i := range ops {
		if ops[i].Id == nil {
			continue
		}
		op := ops[i]
		dc.ops[*op.Id] = &op
	}
}

// next assigns the next operation ID and returns the recorded operation, checking
// that history agrees on what it is.
func (dc *Context) next(typ types.OperationType, name string) (string, *types.Operation) {
	dc.counter++
	id := strconv.Itoa(dc.counter)
	op := dc.ops[id]
	if op != nil {
		if op.Type != typ || aws.ToString(op.Name) != name {
			panic(abort{err: fmt.Errorf("%w: operation %s is %s %q in history, code asks for %s %q",
				ErrNondeterministic, id, op.Type, aws.ToString(op.Name), typ, name)})
		}
	}
	if dc.history[id] {
		dc.visited++
	}
	dc.replaying = dc.visited < len(dc.history)
	return id, op
}

func (dc *Context) checkpoint(updates ...types.OperationUpdate) {
	// The client token is derived from the token being consumed and the updates, so
	// an SDK retry of this same request is deduplicated by the service.
	sum := sha256.New()
	sum.Write([]byte(dc.token))
	for _, u := range updates {
		fmt.Fprintf(sum, "|%s|%s|%s", aws.ToString(u.Id), u.Type, u.Action)
	}
	out, err := dc.h.api.CheckpointDurableExecution(dc.ctx, &lambda.CheckpointDurableExecutionInput{
		DurableExecutionArn: aws.String(dc.arn),
		CheckpointToken:     aws.String(dc.token),
		ClientToken:         aws.String(hex.EncodeToString(sum.Sum(nil))[:32]),
		Updates:             updates,
	})
	if err != nil {
		err = fmt.Errorf("%w: CheckpointDurableExecution: %w", ErrCheckpoint, err)
		var ipv *types.InvalidParameterValueException
		if errors.As(err, &ipv) && !strings.HasPrefix(ipv.ErrorMessage(), "Invalid checkpoint token") {
			// A rejected update (too large, invalid for the operation's state) fails
			// again on every retry: terminal. A stale token may resolve on retry.
			panic(abort{err: err, terminal: true})
		}
		panic(abort{err: err})
	}
	if out.CheckpointToken == nil || *out.CheckpointToken == "" {
		panic(abort{err: fmt.Errorf("%w: CheckpointDurableExecution returned no token", ErrCheckpoint)})
	}
	dc.token = *out.CheckpointToken
	if st := out.NewExecutionState; st != nil {
		if err := dc.load(dc.ctx, ExecutionState{Operations: st.Operations, NextMarker: st.NextMarker}); err != nil {
			panic(abort{err: err})
		}
	}
}

// Step runs fn at most once per successful checkpoint: when history holds its
// result, fn is skipped and the result is decoded from the checkpoint. A failed
// attempt is retried (after Options.Backoff, in a later invocation) up to
// MaxAttempts unless the error is wrapped with [Fatal]. If the process dies after
// fn's side effect and before the SUCCEED checkpoint, the next invocation runs fn
// again: steps are at least once, as on every durable engine.
//
// A live failure returns fn's own error, so typed business errors survive; a
// replayed failure returns an *[OperationError] with the recorded type and message.
func Step[T any](dc *Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	id, op := dc.next(types.OperationTypeStep, name)
	attempt := 1
	if op != nil {
		prev := int32(0)
		if op.StepDetails != nil {
			prev = op.StepDetails.Attempt
		}
		switch op.Status {
		case types.OperationStatusSucceeded:
			var v T
			if op.StepDetails == nil || op.StepDetails.Result == nil {
				return zero, nil
			}
			if err := dc.h.opts.Codec.Unmarshal([]byte(*op.StepDetails.Result), "durable.step", &v); err != nil {
				return zero, fmt.Errorf("durable: step %s (%s): %w", id, name, err)
			}
			return v, nil
		case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
			return zero, operationError(op)
		case types.OperationStatusPending:
			if op.StepDetails != nil && op.StepDetails.NextAttemptTimestamp != nil && dc.h.opts.Now().Before(*op.StepDetails.NextAttemptTimestamp) {
				panic(suspend{})
			}
		}
		// READY, PENDING and due, or STARTED without an outcome (the last attempt
		// died before checkpointing it): run the next attempt.
		attempt = int(prev) + 1
	}
	dc.checkpoint(types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeStep, Action: types.OperationActionStart})
	sctx := withInfo(dc.ctx, Info{ExecutionArn: dc.arn, OperationID: id, OperationName: name, Attempt: attempt})
	v, err := fn(sctx)
	if err == nil {
		payload, merr := dc.h.opts.Codec.Marshal("durable.step", v)
		if merr == nil {
			dc.checkpoint(types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeStep,
				Action: types.OperationActionSucceed, Payload: aws.String(string(payload))})
			return v, nil
		}
		err = Fatal(merr)
	}
	if dc.ctx.Err() != nil && errors.Is(err, dc.ctx.Err()) {
		panic(abort{err: err}) // the invocation deadline, not the step, failed
	}
	var perm *Permanent
	if errors.As(err, &perm) || attempt >= dc.h.opts.MaxAttempts {
		dc.checkpoint(types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeStep,
			Action: types.OperationActionFail, Error: errorObject(err)})
		return zero, err
	}
	delay := int32(math.Ceil(dc.h.opts.Backoff(attempt).Seconds()))
	dc.checkpoint(types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeStep,
		Action: types.OperationActionRetry, Error: errorObject(err), StepOptions: &types.StepOptions{NextAttemptDelaySeconds: aws.Int32(max(delay, 1))}})
	panic(suspend{})
}

// Wait suspends the execution for d (rounded up to whole seconds, at least one):
// the first invocation checkpoints the wait and ends PENDING; the service
// reinvokes when it is due and Wait returns nil.
func (dc *Context) Wait(name string, d time.Duration) error {
	id, op := dc.next(types.OperationTypeWait, name)
	if op == nil {
		secs := int32(max(math.Ceil(d.Seconds()), 1))
		dc.checkpoint(types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeWait,
			Action: types.OperationActionStart, WaitOptions: &types.WaitOptions{WaitSeconds: aws.Int32(secs)}})
		op = dc.ops[id]
	}
	if op == nil {
		panic(suspend{})
	}
	switch op.Status {
	case types.OperationStatusSucceeded:
		return nil
	case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
		return operationError(op)
	}
	panic(suspend{})
}

// WaitForCallback creates a callback, hands its ID to submit (which sends it to
// whoever will answer) and suspends until the service records the answer, which
// it then decodes into T. submit runs live only, right after the callback is
// checkpointed: if the process dies between the two, the callback exists and
// submit is not run again, so make submit's delivery durable or give the callback
// a timeout. A timed-out or failed callback returns an *[OperationError].
func WaitForCallback[T any](dc *Context, name string, timeout time.Duration, submit func(ctx context.Context, callbackID string) error) (T, error) {
	var zero T
	id, op := dc.next(types.OperationTypeCallback, name)
	if op == nil {
		dc.checkpoint(types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeCallback,
			Action: types.OperationActionStart, CallbackOptions: &types.CallbackOptions{TimeoutSeconds: int32(math.Ceil(timeout.Seconds()))}})
		op = dc.ops[id]
		if op == nil || op.CallbackDetails == nil || aws.ToString(op.CallbackDetails.CallbackId) == "" {
			panic(abort{err: fmt.Errorf("%w: callback %s started without a callback ID", ErrCheckpoint, id)})
		}
		if err := submit(withInfo(dc.ctx, Info{ExecutionArn: dc.arn, OperationID: id, OperationName: name, Attempt: 1}), *op.CallbackDetails.CallbackId); err != nil {
			return zero, err
		}
	}
	switch op.Status {
	case types.OperationStatusSucceeded:
		var v T
		if op.CallbackDetails == nil || op.CallbackDetails.Result == nil {
			return zero, nil
		}
		dec := json.NewDecoder(stringsReader(*op.CallbackDetails.Result))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return zero, fmt.Errorf("durable: callback %s (%s) result: %w", id, name, err)
		}
		return v, nil
	case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
		return zero, operationError(op)
	}
	panic(suspend{})
}

func errorObject(err error) *types.ErrorObject {
	typ := fmt.Sprintf("%T", err)
	var oe *OperationError
	if errors.As(err, &oe) {
		typ = oe.Type
	}
	return &types.ErrorObject{ErrorType: aws.String(typ), ErrorMessage: aws.String(err.Error())}
}

func operationError(op *types.Operation) error {
	e := &OperationError{OperationID: aws.ToString(op.Id), Name: aws.ToString(op.Name), Type: string(op.Status), Message: string(op.Status)}
	var eo *types.ErrorObject
	switch {
	case op.StepDetails != nil:
		eo = op.StepDetails.Error
	case op.CallbackDetails != nil:
		eo = op.CallbackDetails.Error
	}
	if eo != nil {
		e.Type, e.Message, e.Data = aws.ToString(eo.ErrorType), aws.ToString(eo.ErrorMessage), aws.ToString(eo.ErrorData)
	}
	return e
}
