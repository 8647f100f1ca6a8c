package durable

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairn-go/cairn/checkpoint"
)

// Func is the durable function: it receives the execution's input and returns
// its result. It is replayed from the top on every invocation, so everything with
// a side effect, a clock or randomness belongs in a [Step].
type Func func(ctx context.Context, dc *Context, input json.RawMessage) (any, error)

// Options configure a [Handler]. The zero value is valid.
type Options struct {
	// Serdes encodes the results of steps, child contexts, conditions and
	// batches into checkpoint payloads and decodes them on replay; operations
	// may set their own. nil: a [JSONSerdes] with checkpoint's default limits,
	// plain JSON as AWS's SDKs write it.
	Serdes Serdes
	// Logger receives the records of [Context.Logger]; nil discards them.
	Logger *slog.Logger
	// LogReplays keeps the records [Context.Logger] gets while the function
	// replays history; by default they are dropped, so each line is logged once
	// however often the code before it is replayed.
	LogReplays bool
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// MaxAttempts bounds step attempts; 0 means 3.
	MaxAttempts int
	// Backoff is the delay before attempt n+1 after attempt n failed; nil: 1s, 2s, 4s, …
	Backoff func(attempt int) time.Duration
	// MaxResultBytes is the largest result returned in the invocation response; a
	// larger one is checkpointed with the EXECUTION operation's SUCCEED instead.
	// 0 means 6 MB minus room for the response envelope, Lambda's response limit.
	MaxResultBytes int
	// TracerProvider creates the spans: one per invocation (start or resume) and
	// one per live step attempt; nil: no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider creates the counters of live attempts and logical operations;
	// nil: no metrics.
	MeterProvider metric.MeterProvider
}

// Handler runs a [Func] against the durable execution service.
type Handler struct {
	api      API
	fn       Func
	opts     Options
	tracer   trace.Tracer
	counters *counters
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
	if opts.Serdes == nil {
		s, err := NewJSONSerdes(checkpoint.Options{})
		if err != nil {
			return nil, err
		}
		opts.Serdes = s
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
	if opts.MaxResultBytes < 0 {
		return nil, fmt.Errorf("%w: Options.MaxResultBytes %d is negative", ErrInvalidInput, opts.MaxResultBytes)
	}
	if opts.MaxResultBytes == 0 {
		opts.MaxResultBytes = 6*1024*1024 - 64*1024
	}
	h := &Handler{api: api, fn: fn, opts: opts}
	if err := h.instrument(); err != nil {
		return nil, err
	}
	return h, nil
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
	x := &execution{h: h, ctx: ctx, arn: in.DurableExecutionArn, token: in.CheckpointToken, ops: map[string]*types.Operation{}, metrics: h.counters}
	if err := x.load(ctx, in.InitialExecutionState); err != nil {
		return Output{}, err
	}
	var input json.RawMessage
	for id, op := range x.ops {
		if op.Type == types.OperationTypeExecution {
			x.execID = id
			if op.ExecutionDetails != nil && op.ExecutionDetails.InputPayload != nil {
				input = json.RawMessage(*op.ExecutionDetails.InputPayload)
			}
		}
	}
	if x.execID == "" {
		return Output{}, fmt.Errorf("%w: history has no EXECUTION operation", ErrInvalidInput)
	}
	for id, op := range x.ops {
		if op.Type != types.OperationTypeExecution && !x.orphan(op) {
			x.history[id] = true
		}
	}
	x.replaying.Store(len(x.history) > 0)
	for _, rebuild := range []bool{false, true} {
		l := slog.New(&replayHandler{inner: h.opts.Logger.Handler(), x: x, keep: h.opts.LogReplays, rebuild: rebuild}).With(slog.String("durable.execution_arn", x.arn))
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			l = l.With(slog.String("aws.lambda.request_id", lc.AwsRequestID))
		}
		if rebuild {
			x.rebuildLogger = l
		} else {
			x.logger = l
		}
	}
	ctx, span := h.startInvocationSpan(ctx, x)
	x.ctx = ctx
	defer func() { h.endInvocationSpan(span, out, err) }()
	dc := &Context{x: x}

	defer func() {
		switch p := recover().(type) {
		case nil:
		case suspend:
			out, err = Output{Status: StatusPending}, nil
		case abort:
			if errors.Is(p.err, ErrNondeterministic) {
				// A divergence is terminal: replaying the same code again cannot help.
				out, err = Output{Status: StatusFailed, Error: &types.ErrorObject{ErrorType: aws.String(ErrorTypeNondeterministic), ErrorMessage: aws.String(p.err.Error())}}, nil
				return
			}
			if p.terminal {
				out, err = Output{Status: StatusFailed, Error: &types.ErrorObject{ErrorType: aws.String(ErrorTypeCheckpointRejected), ErrorMessage: aws.String(p.err.Error())}}, nil
				return
			}
			out, err = Output{}, p.err
		default:
			panic(p)
		}
	}()
	result, ferr := h.fn(withInfo(ctx, Info{ExecutionArn: x.arn, Replaying: x.replaying.Load()}), dc, input)
	if ferr != nil {
		if ctx.Err() != nil && errors.Is(ferr, ctx.Err()) {
			return Output{}, ferr
		}
		return Output{Status: StatusFailed, Error: errorObject(ferr)}, nil
	}
	if none(result) {
		// Nothing to return, as the official SDKs return no Result for undefined.
		return Output{Status: StatusSucceeded}, nil
	}
	b, merr := marshalPlain(result) // as JSON.stringify writes it: no HTML escaping
	if merr != nil {
		return Output{Status: StatusFailed, Error: errorObject(merr)}, nil
	}
	if len(b) > h.opts.MaxResultBytes {
		// Too large for the invocation response: the result goes to the service in
		// an EXECUTION SUCCEED checkpoint and the response carries none.
		x.checkpoint(types.OperationUpdate{Id: aws.String(x.execID), Type: types.OperationTypeExecution,
			Action: types.OperationActionSucceed, Payload: aws.String(string(b))})
		return Output{Status: StatusSucceeded}, nil
	}
	return Output{Status: StatusSucceeded, Result: aws.String(string(b))}, nil
}

// OperationID derives an operation's ID the way the official Durable Execution
// SDKs do: the first 16 hex digits of the MD5 of its step ID, where the step ID is
// the 1-based position of the operation in its context ("3"), prefixed inside a
// child context by the child context's own step ID ("3-2"). Histories written by
// the official TypeScript SDK therefore line up with this adapter's, operation for
// operation (testdata/opid/ids.json holds vectors generated from that SDK).
func OperationID(stepID string) string {
	sum := md5.Sum([]byte(stepID))
	return hex.EncodeToString(sum[:])[:16]
}

// execution is the state one invocation shares between the root context and its
// child contexts; mu serialises checkpoints and history reads, so branches of a
// Parallel or Map may run in goroutines.
type execution struct {
	h         *Handler
	ctx       context.Context
	arn       string
	execID    string // ID of the EXECUTION operation
	mu        sync.Mutex
	token     string
	ops       map[string]*types.Operation
	history   map[string]bool // operation IDs present when the invocation began
	visited   int
	replaying atomic.Bool
	logger    *slog.Logger
	// rebuildLogger is the logger of contexts being rebuilt: what they log
	// was logged by the live run, so it is a replay whatever the visited count.
	rebuildLogger *slog.Logger
	metrics       *counters
}

// Context is the durable function's handle on its execution for one invocation:
// the root context, or a child context inside [RunInChildContext], a [Parallel]
// branch or a [Map] item. A Context is not safe for concurrent use: operations are
// issued in program order, which is what makes their IDs deterministic; branches
// each get their own Context.
type Context struct {
	x        *execution
	prefix   string // step ID of this child context; "" for the root
	parentID string // operation ID of this child context; "" for the root
	counter  int
	// rebuilding is set inside a finished context whose result is being rebuilt
	// by running it again: every operation must come from history, none is
	// checkpointed, and none counts as visited (the finished context counted
	// its whole subtree).
	rebuilding bool
}

// ExecutionArn is the durable execution's ARN.
func (dc *Context) ExecutionArn() string { return dc.x.arn }

// Replaying reports whether the function is still re-executing operations that
// history already holds. Inside a finished child context that is run again to
// rebuild its oversized result it is always true: everything there is history,
// even when the visited count has already reached its end (the finished
// context counted its whole subtree when it was met).
func (dc *Context) Replaying() bool { return dc.rebuilding || dc.x.replaying.Load() }

// Logger returns a logger that drops records while the function replays, so a
// line logged before a completed step appears once, not once per invocation.
// The logger of a context being rebuilt treats every record as replayed.
func (dc *Context) Logger() *slog.Logger {
	if dc.rebuilding {
		return dc.x.rebuildLogger
	}
	return dc.x.logger
}

func (x *execution) load(ctx context.Context, st ExecutionState) error {
	if x.history == nil {
		x.history = map[string]bool{}
	}
	x.merge(st.Operations)
	marker := st.NextMarker
	for marker != nil && *marker != "" {
		out, err := x.h.api.GetDurableExecutionState(ctx, &lambda.GetDurableExecutionStateInput{
			DurableExecutionArn: aws.String(x.arn), CheckpointToken: aws.String(x.token), Marker: marker})
		if err != nil {
			return fmt.Errorf("%w: GetDurableExecutionState: %w", ErrCheckpoint, err)
		}
		x.merge(out.Operations)
		marker = out.NextMarker
	}
	return nil
}

func (x *execution) merge(ops []types.Operation) {
	for i := range ops {
		if ops[i].Id == nil {
			continue
		}
		op := ops[i]
		x.ops[*op.Id] = &op
	}
}

// orphan reports whether an ancestor of op is missing from state. State leaves
// out the descendants of a finished context (without ReplayChildren) through
// every finished context below it, but an unfinished one among them (the
// branch a batch left suspended when it completed early) keeps its own
// operations in state, without itself: that is the checkpoint server's rule
// for GetDurableExecutionState, and the fake's. No replay reaches such an
// operation, the finished context's body is not run again, so it is not history
// to replay: counted, it would keep the execution replaying, and its log
// lines dropped, to the end.
func (x *execution) orphan(op *types.Operation) bool {
	_, missing := x.ancestor(op, func(string) bool { return false })
	return missing
}

// ancestor walks op's ParentId chain, its parent first, and returns the first
// ancestor ID for which match reports true, or "" with missing set when the
// chain reaches an operation state does not hold first. The caller holds x.mu
// or is alone with x.
func (x *execution) ancestor(op *types.Operation, match func(id string) bool) (id string, missing bool) {
	p := aws.ToString(op.ParentId)
	for range len(x.ops) { // bounded: a corrupt history could hold a cycle
		if p == "" {
			return "", false
		}
		if match(p) {
			return p, false
		}
		parent := x.ops[p]
		if parent == nil {
			return "", true
		}
		p = aws.ToString(parent.ParentId)
	}
	return "", false
}

// op returns a copy of the recorded operation id, or nil.
func (x *execution) op(id string) *types.Operation {
	x.mu.Lock()
	defer x.mu.Unlock()
	if op := x.ops[id]; op != nil {
		c := *op
		return &c
	}
	return nil
}

// next assigns the next operation ID and returns the recorded operation, checking
// that history agrees on what it is.
func (dc *Context) next(typ types.OperationType, sub, name string) (string, *types.Operation) {
	dc.counter++
	step := strconv.Itoa(dc.counter)
	if dc.prefix != "" {
		step = dc.prefix + "-" + step
	}
	id := OperationID(step)
	x := dc.x
	x.mu.Lock()
	defer x.mu.Unlock()
	var op *types.Operation
	if rec := x.ops[id]; rec != nil {
		if err := matches(rec, id, step, typ, sub, name); err != nil {
			panic(abort{err: err})
		}
		c := *rec
		op = &c
	}
	if dc.rebuilding {
		// A WAIT or CALLBACK may be left unsettled by a context that finished
		// (the loser of a Race, a deadline not cancelled): it is a future, and
		// replaying its creation needs only its record. Anything else the live
		// run left unfinished would have kept the context from finishing.
		if op == nil || !finished(op.Status) && typ != types.OperationTypeWait && typ != types.OperationTypeCallback {
			panic(abort{err: fmt.Errorf("%w: operation %s (step %s, %s %q) is not finished in the history of the context being rebuilt", ErrNondeterministic, id, step, typ, name)})
		}
		return id, op
	}
	if x.history[id] {
		x.visited++
	}
	x.replaying.Store(x.visited < len(x.history))
	return id, op
}

// matches checks that the recorded operation rec is the operation the code
// asks for at this position: same type, subtype and name, as the official
// SDKs check (a STEP that became a WaitForCondition, or a RunInChildContext
// that became a Parallel, is a divergence, not a payload to misread). A
// record without a subtype (written by a client that sent none) is not
// compared on it.
func matches(rec *types.Operation, id, step string, typ types.OperationType, sub, name string) error {
	recSub := aws.ToString(rec.SubType)
	if rec.Type != typ || aws.ToString(rec.Name) != name || (recSub != "" && sub != "" && recSub != sub) {
		return fmt.Errorf("%w: operation %s (step %s) is %s/%s %q in history, code asks for %s/%s %q",
			ErrNondeterministic, id, step, rec.Type, recSub, aws.ToString(rec.Name), typ, sub, name)
	}
	return nil
}

// peek returns the recorded operation that the next call to next will get, or
// nil, without assigning its ID.
func (dc *Context) peek() *types.Operation {
	step := strconv.Itoa(dc.counter + 1)
	if dc.prefix != "" {
		step = dc.prefix + "-" + step
	}
	return dc.x.op(OperationID(step))
}

// stepID returns the step ID of the operation next assigned, for child contexts.
func (dc *Context) stepID() string {
	step := strconv.Itoa(dc.counter)
	if dc.prefix != "" {
		step = dc.prefix + "-" + step
	}
	return step
}

// update returns an update of operation id carrying this context's parent ID.
func (dc *Context) update(id, name string, typ types.OperationType, sub string, action types.OperationAction) types.OperationUpdate {
	u := types.OperationUpdate{Id: aws.String(id), Type: typ, Action: action, SubType: aws.String(sub)}
	if name != "" {
		u.Name = aws.String(name) // an unnamed operation is checkpointed without one, as the official SDKs do
	}
	if dc.parentID != "" {
		u.ParentId = aws.String(dc.parentID)
	}
	return u
}

func (dc *Context) checkpoint(updates ...types.OperationUpdate) {
	if dc.rebuilding {
		// Unreachable while next refuses unfinished operations; a guard so a
		// rebuild can never write to the execution.
		panic(abort{err: fmt.Errorf("%w: a context being rebuilt from history tried to checkpoint %s %s", ErrNondeterministic, updates[0].Type, updates[0].Action)})
	}
	dc.x.checkpoint(updates...)
}

func (x *execution) checkpoint(updates ...types.OperationUpdate) {
	x.mu.Lock()
	defer x.mu.Unlock()
	// The client token is derived from the token being consumed and the updates, so
	// an SDK retry of this same request is deduplicated by the service.
	sum := sha256.New()
	sum.Write([]byte(x.token))
	for _, u := range updates {
		fmt.Fprintf(sum, "|%s|%s|%s", aws.ToString(u.Id), u.Type, u.Action)
	}
	out, err := x.h.api.CheckpointDurableExecution(x.ctx, &lambda.CheckpointDurableExecutionInput{
		DurableExecutionArn: aws.String(x.arn),
		CheckpointToken:     aws.String(x.token),
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
	x.token = *out.CheckpointToken
	if st := out.NewExecutionState; st != nil {
		if err := x.load(x.ctx, ExecutionState{Operations: st.Operations, NextMarker: st.NextMarker}); err != nil {
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
// A failure returns an *[OperationError] (ErrorType "StepError", as the
// official SDKs hand it over) with the recorded type and message; a live one
// wraps fn's own error, so errors.Is and errors.As still find typed business
// errors. The recorded type is that of fn's error: its ErrorType method's
// answer, else "Error".
func Step[T any](dc *Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	return StepWith(dc, name, StepOptions{}, fn)
}

// StepOptions configure one step in [StepWith]; zero fields take the handler's
// Options.
type StepOptions struct {
	// MaxAttempts bounds this step's attempts; 0: Options.MaxAttempts.
	MaxAttempts int
	// Backoff is the delay before attempt n+1; nil: Options.Backoff.
	Backoff func(attempt int) time.Duration
	// AtMostOnce makes an attempt that was interrupted (STARTED, no outcome
	// checkpointed) count as failed with [ErrInterrupted] instead of running the
	// body again: for effects that must not be repeated and cannot be made
	// idempotent. The failure is retried like any other unless attempts are
	// exhausted, and the START of every attempt is checkpointed before the body
	// runs.
	AtMostOnce bool
	// Serdes encodes this step's result; nil: Options.Serdes.
	Serdes Serdes
}

// ErrInterrupted: an at-most-once step's attempt began and never checkpointed
// an outcome, so whether its effect happened is unknown.
var ErrInterrupted = errors.New("durable: at-most-once step attempt was interrupted")

// StepWith is [Step] with per-step retry settings and semantics.
func StepWith[T any](dc *Context, name string, so StepOptions, fn func(ctx context.Context) (T, error)) (T, error) {
	return stepWith(dc, name, name, so, fn)
}

// stepWith runs the step name, which label names in spans, metrics and
// errors: an operation the official SDKs checkpoint without a name still gets
// one there.
func stepWith[T any](dc *Context, name, label string, so StepOptions, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if so.MaxAttempts < 0 {
		return zero, Fatal(fmt.Errorf("%w: StepOptions.MaxAttempts %d is negative", ErrInvalidInput, so.MaxAttempts))
	}
	if so.MaxAttempts == 0 {
		so.MaxAttempts = dc.x.h.opts.MaxAttempts
	}
	if so.Backoff == nil {
		so.Backoff = dc.x.h.opts.Backoff
	}
	if so.Serdes == nil {
		so.Serdes = dc.x.h.opts.Serdes
	}
	id, op := dc.next(types.OperationTypeStep, "Step", name)
	attempt := 1
	started := false
	if op != nil {
		if op.StepDetails != nil {
			// The service counts finished attempts (SUCCEED, FAIL, RETRY).
			attempt = int(op.StepDetails.Attempt) + 1
		}
		switch op.Status {
		case types.OperationStatusSucceeded:
			dc.x.metrics.replayed(dc.x.ctx, label)
			var v T
			if op.StepDetails == nil || op.StepDetails.Result == nil {
				return zero, nil
			}
			if err := dc.deserialize(so.Serdes, KindStep, id, label, op.StepDetails.Result, &v); err != nil {
				return zero, err
			}
			return v, nil
		case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
			dc.x.metrics.replayed(dc.x.ctx, label)
			return zero, operationError(op)
		case types.OperationStatusPending:
			// A retry is scheduled; the service marks it READY and invokes again.
			panic(suspend{})
		case types.OperationStatusStarted:
			// The last attempt began but its outcome was never checkpointed (the
			// process died): run it again without a second START, which the service
			// rejects for a STARTED step. At least once.
			started = true
		}
	}
	var v T
	var err error
	switch {
	case started && so.AtMostOnce:
		err = fmt.Errorf("%w: step %s (%s) attempt %d", ErrInterrupted, id, label, attempt)
	default:
		if !started {
			dc.checkpoint(dc.update(id, name, types.OperationTypeStep, "Step", types.OperationActionStart))
		}
		v, err = runAttempt(dc, id, label, attempt, fn)
	}
	if err == nil {
		payload, merr := dc.serialize(so.Serdes, KindStep, id, label, v)
		if merr == nil {
			v, merr = roundTrip(dc, so.Serdes, KindStep, id, label, payload, v)
		}
		if merr == nil {
			u := dc.update(id, name, types.OperationTypeStep, "Step", types.OperationActionSucceed)
			u.Payload = payload
			dc.checkpoint(u)
			dc.x.metrics.finished(dc.x.ctx, label, "succeeded")
			return v, nil
		}
		err = Fatal(merr)
	}
	if dc.x.ctx.Err() != nil && errors.Is(err, dc.x.ctx.Err()) {
		panic(abort{err: err}) // the invocation deadline, not the step, failed
	}
	var perm *Permanent
	if errors.As(err, &perm) || attempt >= so.MaxAttempts {
		u := dc.update(id, name, types.OperationTypeStep, "Step", types.OperationActionFail)
		u.Error = errorObject(err)
		dc.checkpoint(u)
		dc.x.metrics.finished(dc.x.ctx, label, "failed")
		return zero, liveFailure(id, label, ErrorTypeStep, u.Error, err)
	}
	delay := int32(math.Ceil(so.Backoff(attempt).Seconds()))
	u := dc.update(id, name, types.OperationTypeStep, "Step", types.OperationActionRetry)
	u.Error = errorObject(err)
	u.StepOptions = &types.StepOptions{NextAttemptDelaySeconds: aws.Int32(max(delay, 1))}
	dc.checkpoint(u)
	panic(suspend{})
}

// Wait suspends the execution for d (rounded up to whole seconds, at least one):
// the first invocation checkpoints the wait and ends PENDING; the service
// reinvokes when it is due and Wait returns nil. It is [Context.StartWait]
// followed by [Wait.Wait]; a wait cancelled by the completion of the [Parallel]
// or [Map] branch it is in returns an error matching [ErrWaitCancelled].
func (dc *Context) Wait(name string, d time.Duration) error {
	w, err := dc.StartWait(name, d)
	if err != nil {
		return err
	}
	return w.Wait()
}

// ErrWaitCancelled: the wait was cancelled before it elapsed, by [Wait.Cancel]
// or because the [Parallel] or [Map] branch it was in was left unfinished when
// the batch completed.
var ErrWaitCancelled = errors.New("durable: wait cancelled")

// Wait is a WAIT operation started by [Context.StartWait]: the service ends it
// SUCCEEDED once its duration has passed, unless [Wait.Cancel] ends it
// CANCELLED first.
type Wait struct {
	dc       *Context
	id, name string
}

// maxWaitSeconds is the largest duration WaitOptions.WaitSeconds carries.
const maxWaitSeconds = math.MaxInt32

// DurationError reports a duration the service cannot carry: a negative
// wait or timeout, or one longer than its int32 seconds. It matches
// [ErrInvalidInput], and nothing is checkpointed for the operation.
type DurationError struct {
	// Field names the duration, e.g. "Wait(\"cool-off\")" or "CallbackOptions.Timeout".
	Field string
	// Value is the duration given.
	Value time.Duration
	// Reason says what is wrong with it.
	Reason string
}

// Error names the field, the value and what is wrong with it.
func (e *DurationError) Error() string {
	return fmt.Sprintf("durable: invalid %s %s: %s", e.Field, e.Value, e.Reason)
}

// Unwrap makes a DurationError match [ErrInvalidInput].
func (e *DurationError) Unwrap() error { return ErrInvalidInput }

// waitSeconds rounds a wait up to whole seconds, at least one (4.5.2 of the
// specification: 0 and 1 ns both wait 1 s, 1.2 s waits 2 s), refusing
// negative durations and those beyond WaitSeconds.
func waitSeconds(name string, d time.Duration) (int32, error) {
	field := fmt.Sprintf("Wait(%q)", name)
	if d < 0 {
		return 0, &DurationError{Field: field, Value: d, Reason: "negative"}
	}
	secs := max(math.Ceil(d.Seconds()), 1)
	if secs > maxWaitSeconds {
		return 0, &DurationError{Field: field, Value: d, Reason: fmt.Sprintf("longer than %d seconds", maxWaitSeconds)}
	}
	return int32(secs), nil
}

// StartWait starts a WAIT operation of d (rounded up to whole seconds, at least
// one) without suspending, so the function can go on and later block on it with
// [Wait.Wait] or end it early with [Wait.Cancel]. The wait is started once:
// replays return a handle on the same operation, whatever its state. A d
// longer than WaitSeconds can carry (about 68 years) is an error matching
// [ErrInvalidInput].
func (dc *Context) StartWait(name string, d time.Duration) (*Wait, error) {
	secs, err := waitSeconds(name, d)
	if err != nil {
		return nil, Fatal(err)
	}
	id, op := dc.next(types.OperationTypeWait, "Wait", name)
	if op == nil {
		u := dc.update(id, name, types.OperationTypeWait, "Wait", types.OperationActionStart)
		u.WaitOptions = &types.WaitOptions{WaitSeconds: aws.Int32(secs)}
		dc.checkpoint(u)
	}
	return &Wait{dc: dc, id: id, name: name}, nil
}

// Wait returns nil once the wait has elapsed and suspends the execution until
// then: the service reinvokes when it is due. A cancelled wait returns an error
// matching [ErrWaitCancelled] (and, with errors.As, an *[OperationError]).
func (w *Wait) Wait() error {
	if done, _, err := w.settled(); done {
		return err
	}
	panic(suspend{})
}

// Cancel ends a wait that has not elapsed: it checkpoints CANCEL, the wait is
// CANCELLED and the service no longer reinvokes the execution for it. Cancelling
// a wait that already elapsed or was cancelled does nothing, so a replay that
// finds the wait CANCELLED does not cancel it again. Like every operation, a
// failed checkpoint ends the invocation (Lambda retries it) rather than
// returning; the error result is reserved and nil today.
func (w *Wait) Cancel() error {
	op := w.dc.x.op(w.id)
	if op == nil || op.Status != types.OperationStatusStarted {
		return nil
	}
	w.dc.checkpoint(w.dc.update(w.id, w.name, types.OperationTypeWait, "Wait", types.OperationActionCancel))
	w.dc.x.cancelled(w.id)
	return nil
}

// cancelled records locally that the service accepted a CANCEL of the waits
// ids: STARTED → CANCELLED is the only transition CANCEL makes, whether or not
// the checkpoint response echoed the new state.
func (x *execution) cancelled(ids ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if op := x.ops[id]; op != nil && op.Status == types.OperationStatusStarted {
			op.Status = types.OperationStatusCancelled
		}
	}
}

// CallbackOptions configure [WaitForCallbackWith] and [CreateCallback].
type CallbackOptions struct {
	// Timeout ends the callback TIMED_OUT when no answer arrives in time; 0: none.
	Timeout time.Duration
	// HeartbeatTimeout ends it TIMED_OUT when the answering system sends no
	// SendDurableExecutionCallbackHeartbeat for that long; 0: no heartbeat needed.
	HeartbeatTimeout time.Duration
	// Submit configures the step that runs the submit function of
	// [WaitForCallbackWith]: its attempts and backoff. [CreateCallback] ignores it.
	// A negative MaxAttempts is an error matching [ErrInvalidInput], returned
	// before anything is recorded.
	Submit StepOptions
	// Serdes decodes the answer; nil: a []byte or string result gets the
	// answer's text as it was sent (JSON or not, as the official SDKs hand it
	// over; a string answer that is a JSON string is unquoted), anything else
	// is decoded from JSON.
	Serdes Serdes
}

// WaitForCallback is [WaitForCallbackWith] with only a timeout.
func WaitForCallback[T any](dc *Context, name string, timeout time.Duration, submit func(ctx context.Context, callbackID string) error) (T, error) {
	return WaitForCallbackWith[T](dc, name, CallbackOptions{Timeout: timeout}, submit)
}

// WaitForCallbackWith creates a callback, hands its ID to submit (which sends it
// to whoever will answer) and suspends until the service records the answer,
// which it then decodes into T. A timed-out or failed callback returns an
// *[OperationError].
//
// As in the official SDKs, it is a child context (subtype WaitForCallback)
// holding the callback and a step that runs submit, so submit is durable: it
// is retried like a step (opts.Submit; by default the handler's MaxAttempts
// and Backoff), it runs again if the process dies before its success is
// checkpointed — make it idempotent, the callback ID is the same every time —
// and it is not run again once it has succeeded. If every attempt fails, the
// error is returned and the callback is left unanswered.
//
// An execution whose history was written by an earlier version of this
// package, with the callback at this position and no child context, goes on
// as it began: submit ran when the callback was created and does not run
// again.
func WaitForCallbackWith[T any](dc *Context, name string, opts CallbackOptions, submit func(ctx context.Context, callbackID string) error) (T, error) {
	var zero T
	// Refused before anything is recorded: found by the submitter step or the
	// callback inside the context, they would fail the context after its
	// callback was created, and the replayed failure would no longer match
	// ErrInvalidInput.
	if err := checkCallbackOptions(name, opts); err != nil {
		return zero, err
	}
	if opts.Submit.MaxAttempts < 0 {
		return zero, Fatal(fmt.Errorf("%w: CallbackOptions.Submit.MaxAttempts %d of %q is negative", ErrInvalidInput, opts.Submit.MaxAttempts, name))
	}
	if op := dc.peek(); op != nil && op.Type == types.OperationTypeCallback && aws.ToString(op.Name) == name {
		cb, _, err := createCallback[T](dc, name, opts)
		if err != nil {
			return zero, err
		}
		return cb.Result()
	}
	// The context's result is the answer's text, recorded as a JSON string
	// as the official SDKs record it, and decoded into T here, live and on
	// replay alike.
	raw, err := runChild(dc, name, subWaitCallback, func(ctx context.Context, child *Context) (answer, error) {
		cb, _, err := createCallback[T](child, "", opts)
		if err != nil {
			return answer{}, err
		}
		if _, err := stepWith(child, "", name+"-submitter", opts.Submit, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, submit(ctx, cb.callbackID)
		}); err != nil {
			return answer{}, err
		}
		text, err := cb.raw()
		if err != nil {
			var oe *OperationError
			if errors.As(err, &oe) && oe.Name == "" {
				// The unnamed callback's failure is reported as the failure of
				// this WaitForCallback context, the operation a replay returns
				// it from: its ID and name, the callback's type, message, data.
				oe.OperationID, oe.Name = child.parentID, name
			}
			return answer{}, err
		}
		return answer{text: text}, nil
	}, nil, nil, callbackContextSerdes{dc.x.h.opts.Serdes})
	if err != nil {
		return zero, err
	}
	if raw.text == nil {
		return zero, nil
	}
	return decodeAnswer[T](dc, opts.Serdes, raw.id, name, *raw.text)
}

// answer is the result of a WaitForCallback context: the answer's text, nil
// when the callback succeeded without a result.
type answer struct {
	text *string
	id   string
}

// callbackContextSerdes records a WaitForCallback context's result as the
// official SDKs do, the answer's text as a JSON string, and reads it back;
// it also reads the envelope an earlier release recorded there, which held
// the decoded answer.
type callbackContextSerdes struct{ legacy Serdes }

func (s callbackContextSerdes) Serialize(sc SerdesContext, v any) (*string, error) {
	a := v.(answer)
	if a.text == nil {
		return nil, nil
	}
	b, err := marshalPlain(*a.text)
	if err != nil {
		return nil, err
	}
	str := string(b)
	return &str, nil
}

func (s callbackContextSerdes) Deserialize(sc SerdesContext, data *string, target any) error {
	a := target.(*answer)
	a.id = sc.OperationID
	if data == nil {
		return nil
	}
	text := *data
	if env, ok, err := openLegacy(s.legacy, data); err != nil {
		return err
	} else if ok {
		text = string(env)
	}
	var str string
	if json.Unmarshal([]byte(text), &str) == nil {
		a.text = &str
		return nil
	}
	a.text = &text // the earlier release's decoded answer, as JSON
	return nil
}

// decodeAnswer decodes a callback's answer into T: with serdes when set;
// else the text itself for []byte, the text (unquoted when it is a JSON
// string) for string, JSON otherwise.
func decodeAnswer[T any](dc *Context, serdes Serdes, id, name, text string) (T, error) {
	var v T
	if serdes != nil {
		err := dc.deserialize(serdes, KindCallback, id, name, &text, &v)
		return v, err
	}
	rv := reflect.ValueOf(&v).Elem()
	switch {
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8:
		rv.SetBytes([]byte(text))
		return v, nil
	case rv.Kind() == reflect.String:
		var s string
		if json.Unmarshal([]byte(text), &s) != nil {
			s = text
		}
		rv.SetString(s)
		return v, nil
	}
	dec := json.NewDecoder(stringsReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return v, &SerdesError{OperationID: id, Name: name, Op: "deserialize", Err: fmt.Errorf("callback answer is not the JSON of %T: %w", v, err)}
	}
	return v, nil
}

// Callback is a callback created by [CreateCallback]: its ID goes to the system
// that will answer, and Result waits for the answer.
type Callback[T any] struct {
	dc         *Context
	id, name   string
	callbackID string
	serdes     Serdes
}

// ID is the callback ID to pass to SendDurableExecutionCallbackSuccess,
// SendDurableExecutionCallbackFailure and SendDurableExecutionCallbackHeartbeat.
func (c *Callback[T]) ID() string { return c.callbackID }

// CreateCallback creates a CALLBACK operation (once; replays return the same
// callback) without waiting for it. Send [Callback.ID] from a [Step], so the
// delivery is itself durable, then call [Callback.Result]. A negative timeout,
// or one longer than about 68 years, is an error matching [ErrInvalidInput]
// and records nothing.
func CreateCallback[T any](dc *Context, name string, opts CallbackOptions) (*Callback[T], error) {
	cb, _, err := createCallback[T](dc, name, opts)
	return cb, err
}

// checkCallbackOptions refuses timeouts the service cannot carry: a negative
// one (the checkpoint server times such a callback out at once, the service's
// answer is not known) or one beyond the int32 seconds of CallbackOptions.
func checkCallbackOptions(name string, opts CallbackOptions) error {
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"Timeout", opts.Timeout}, {"HeartbeatTimeout", opts.HeartbeatTimeout}} {
		if d.v < 0 {
			return Fatal(&DurationError{Field: fmt.Sprintf("CallbackOptions.%s of callback %q", d.field, name), Value: d.v, Reason: "negative"})
		}
		if math.Ceil(d.v.Seconds()) > math.MaxInt32 {
			return Fatal(&DurationError{Field: fmt.Sprintf("CallbackOptions.%s of callback %q", d.field, name), Value: d.v, Reason: fmt.Sprintf("longer than %d seconds", math.MaxInt32)})
		}
	}
	return nil
}

func createCallback[T any](dc *Context, name string, opts CallbackOptions) (*Callback[T], bool, error) {
	if err := checkCallbackOptions(name, opts); err != nil {
		return nil, false, err
	}
	id, op := dc.next(types.OperationTypeCallback, "Callback", name)
	created := false
	if op == nil {
		u := dc.update(id, name, types.OperationTypeCallback, "Callback", types.OperationActionStart)
		u.CallbackOptions = &types.CallbackOptions{TimeoutSeconds: int32(math.Ceil(opts.Timeout.Seconds())),
			HeartbeatTimeoutSeconds: int32(math.Ceil(opts.HeartbeatTimeout.Seconds()))}
		dc.checkpoint(u)
		op = dc.x.op(id)
		created = true
	}
	if op == nil || op.CallbackDetails == nil || aws.ToString(op.CallbackDetails.CallbackId) == "" {
		panic(abort{err: fmt.Errorf("%w: callback %s started without a callback ID", ErrCheckpoint, id)})
	}
	return &Callback[T]{dc: dc, id: id, name: name, callbackID: *op.CallbackDetails.CallbackId, serdes: opts.Serdes}, created, nil
}

// Result returns the answer decoded into T, an *[OperationError] when the
// callback failed or timed out, and otherwise suspends the execution until the
// service has an answer.
func (c *Callback[T]) Result() (T, error) {
	var zero T
	text, err := c.raw()
	if err != nil || text == nil {
		return zero, err
	}
	return decodeAnswer[T](c.dc, c.serdes, c.id, c.name, *text)
}

// raw returns the answer's text (nil: answered without a result), the
// callback's failure, or suspends until the service has an answer.
func (c *Callback[T]) raw() (*string, error) {
	op := c.dc.x.op(c.id)
	if op == nil {
		panic(suspend{})
	}
	switch op.Status {
	case types.OperationStatusSucceeded:
		if op.CallbackDetails == nil || op.CallbackDetails.Result == nil {
			return nil, nil
		}
		return op.CallbackDetails.Result, nil
	case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
		return nil, operationError(op)
	}
	panic(suspend{})
}

// maxErrorBytes bounds the JSON of an error object this package checkpoints.
// The service refuses an update carrying an error when the update's JSON is
// over 32 KB, and an operation's failure can be larger than that (a callback
// failure sent by another system, a long error message): refused, the update
// would fail the whole execution with CheckpointRejected instead of letting
// the function see the failure. The margin leaves room for the rest of the
// update (IDs, a name of up to 256 characters, escaped).
const maxErrorBytes = 32768 - 2048

// truncated marks a field fitError cut.
const truncated = " …[truncated]"

// fitError cuts the data, then the message, then the type of eo until its JSON
// fits maxErrorBytes: the recorded failure keeps its beginning, and a replay
// returns that. Cutting k bytes of a string shortens its JSON by at least k.
func fitError(eo *types.ErrorObject) *types.ErrorObject {
	size := func() int {
		b, _ := json.Marshal(struct {
			T, M, D *string `json:",omitempty"`
		}{eo.ErrorType, eo.ErrorMessage, eo.ErrorData})
		return len(b)
	}
	for _, f := range []**string{&eo.ErrorData, &eo.ErrorMessage, &eo.ErrorType} {
		over := size() - maxErrorBytes
		if over <= 0 {
			break
		}
		if *f == nil {
			continue
		}
		v := **f
		keep := len(v) - over - len(truncated)
		if keep <= 0 {
			*f = aws.String(truncated[1:])
			continue
		}
		for keep > 0 && !utf8.RuneStart(v[keep]) {
			keep--
		}
		*f = aws.String(v[:keep] + truncated)
	}
	return eo
}
