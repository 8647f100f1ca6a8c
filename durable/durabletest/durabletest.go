// Package durabletest runs durable functions against the two local stand-ins of
// the Lambda durable execution service: cairn's in-memory lambdafake and AWS's
// own local checkpoint server (shipped in the npm package
// @aws/durable-execution-sdk-js-testing and served over HTTP by
// testdata/checkpointserver/server.mjs). Tests written against [Execution] run on
// both, so every behaviour the fake claims is checked against AWS's validators.
package durabletest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/lambdafake"
)

// EndpointEnv names the environment variable with the checkpoint server's URL
// (scripts/test sets it); unset, [Run] starts a server itself (see
// [StartServer]), or skips the server subtests saying what to install.
const EndpointEnv = "DURABLE_CHECKPOINT_ENDPOINT"

// Invoker is what Drive calls; *durable.Handler implements it.
type Invoker interface {
	Handle(ctx context.Context, in durable.Input) (durable.Output, error)
}

// RawInvoker is an [Invoker] that takes the invocation payload as the
// service sends it, such as a function of another SDK run by [NodeInvoker]:
// Drive on the checkpoint server hands it the server's payload unchanged.
type RawInvoker interface {
	Invoker
	InvokeRaw(ctx context.Context, payload []byte) (durable.Output, error)
}

// InvokeFunc plays a function called by durable.Invoke: it gets the
// CHAINED_INVOKE operation and returns the invoked function's JSON result.
type InvokeFunc func(op types.Operation) (string, error)

// Execution is one durable execution on a backend.
type Execution interface {
	// API is the client the handler under test uses.
	API() durable.API
	// Drive invokes h until the execution ends, waits only on a callback, an
	// invocation fails, or max invocations ran. Waits and retry delays are
	// skipped (the service's timers fire at once).
	Drive(ctx context.Context, h Invoker, max int) (durable.Output, error)
	// Input starts one invocation and returns its payload, for calling Handle directly.
	Input(t testing.TB) durable.Input
	// Operations returns the execution's operations as GetDurableExecutionState
	// reports them.
	Operations(t testing.TB) []types.Operation
	// AllOperations returns every operation recorded, the children of
	// finished contexts (branches, callbacks, submitters) included, which
	// GetDurableExecutionState leaves out: the fake's whole history; on the
	// server, the latest version of every operation an invocation input or a
	// checkpoint response carried.
	AllOperations(t testing.TB) []types.Operation
	CompleteCallback(ctx context.Context, callbackID, result string) error
	FailCallback(ctx context.Context, callbackID, message string) error
	HeartbeatCallback(ctx context.Context, callbackID string) error
	// Elapse lets d pass for the service's callback timers: the fake's clock
	// moves; on the server the driver fires the callback timeouts and
	// heartbeat timeouts due within it, without sleeping.
	Elapse(d time.Duration)
	// Invocations counts the invocations so far.
	Invocations() int
	// Now is the backend's clock, for durable.Options.Now.
	Now() time.Time
}

// Backend creates executions.
type Backend struct {
	Name string
	// Real is set for AWS's checkpoint server.
	Real bool
	New  func(t testing.TB, input json.RawMessage, invoke InvokeFunc) Execution
}

// Backends returns the fake and the checkpoint server; the latter needs
// EndpointEnv (Run skips it otherwise).
func Backends() []Backend {
	return []Backend{{Name: "lambdafake", New: newFake}, {Name: "checkpointserver", Real: true, New: newServer}}
}

// Run runs test once per backend as a subtest. The checkpoint server is the
// one at EndpointEnv, else one Run starts for the test binary with Node and
// the pinned npm packages; without them (or with NoServerEnv set) that
// subtest skips, saying why.
func Run(t *testing.T, test func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			if b.Real {
				if _, err := Endpoint(); err != nil {
					t.Skip(err)
				}
			}
			t.Parallel()
			test(t, b)
		})
	}
}

// ---- lambdafake ---------------------------------------------------------------

var fakeStart = time.Date(2026, 10, 8, 12, 0, 0, 0, time.UTC)

// FakeARN is the execution ARN of executions on the fake.
const FakeARN = "arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST/durable-execution/run-1/abc"

type fakeExec struct{ f *lambdafake.Fake }

func newFake(_ testing.TB, input json.RawMessage, invoke InvokeFunc) Execution {
	f := lambdafake.New(FakeARN, input, fakeStart)
	f.Invoke = invoke
	return &fakeExec{f: f}
}

// Fake returns the lambdafake behind an execution of the fake backend, or nil.
func Fake(e Execution) *lambdafake.Fake {
	if fe, ok := e.(*fakeExec); ok {
		return fe.f
	}
	return nil
}

func (e *fakeExec) API() durable.API { return e.f }
func (e *fakeExec) Drive(ctx context.Context, h Invoker, max int) (durable.Output, error) {
	return e.f.Drive(ctx, h, max)
}
func (e *fakeExec) Input(testing.TB) durable.Input {
	return e.f.Input()
}
func (e *fakeExec) Operations(testing.TB) []types.Operation    { return e.f.State() }
func (e *fakeExec) AllOperations(testing.TB) []types.Operation { return e.f.Operations() }
func (e *fakeExec) CompleteCallback(_ context.Context, id, result string) error {
	return e.f.CompleteCallback(id, result)
}
func (e *fakeExec) FailCallback(_ context.Context, id, msg string) error {
	return e.f.FailCallback(id, msg)
}
func (e *fakeExec) HeartbeatCallback(_ context.Context, id string) error {
	return e.f.HeartbeatCallback(id)
}
func (e *fakeExec) Elapse(d time.Duration) { e.f.Advance(d) }
func (e *fakeExec) Invocations() int       { return e.f.Invocations }
func (e *fakeExec) Now() time.Time         { return e.f.Now() }

// ---- AWS's checkpoint server ----------------------------------------------------

type serverExec struct {
	base   string
	client *lambda.Client
	invoke InvokeFunc

	mu          sync.Mutex
	elapsed     time.Duration              // what Elapse let pass
	timers      map[string]*callbackTimer  // callback timers, by operation ID
	seen        map[string]types.Operation // every operation reported, latest version
	order       []string
	arn         string
	next        *durable.Input
	nextRaw     []byte // the payload of next, as the server sent it
	lastRaw     []byte // the payload of the invocation start returned last
	invocation  string
	token       string
	invocations int
}

// Client returns a Lambda client for the checkpoint server at endpoint. It
// retries only connection errors, as the SDK's default retryer does for a
// Lambda function's client (a checkpoint's client token makes the retry
// safe); any answer of the server, an error included, reaches the caller as
// it was sent.
func Client(endpoint string) *lambda.Client {
	return lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: aws.AnonymousCredentials{}, Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.Retryables = []retry.IsErrorRetryable{retry.RetryableConnectionError{}}
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 10 * time.Millisecond, nil })
			o.RateLimiter = ratelimit.None
		})})
}

func newServer(t testing.TB, input json.RawMessage, invoke InvokeFunc) Execution {
	t.Helper()
	base, err := Endpoint()
	if err != nil {
		t.Skip(err)
	}
	e := &serverExec{base: base, client: Client(base), invoke: invoke}
	raw, err := e.control("start", map[string]any{"payload": string(input)})
	if err != nil {
		t.Fatalf("checkpoint server: start execution: %v", err)
	}
	in, inv, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	e.arn, e.next, e.nextRaw, e.invocation, e.token = in.DurableExecutionArn, &in, raw, inv, in.CheckpointToken
	return e
}

func decode(raw []byte) (durable.Input, string, error) {
	in, err := durable.DecodeInput(raw)
	if err != nil {
		return durable.Input{}, "", fmt.Errorf("checkpoint server: invocation input: %w", err)
	}
	var extra struct{ InvocationId string }
	_ = json.Unmarshal(raw, &extra)
	return in, extra.InvocationId, nil
}

func (e *serverExec) control(path string, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	resp, err := http.Post(e.base+"/harness/"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", path, resp.Status, out)
	}
	return out, nil
}

func (e *serverExec) API() durable.API { return serverAPI{Client: e.client, e: e} }

// serverAPI is the client handlers use on the checkpoint server. The server
// validates a WAIT CANCEL and records it, but leaves the wait STARTED for the
// service's timer side to settle, which the testing SDK's own runner does not
// do (it acts on a wait's START only). The driver plays that part of the
// service: once a checkpoint with WAIT CANCEL updates is accepted, it sets each
// wait CANCELLED through UpdateCheckpointData, before the checkpoint returns,
// and the response carries the waits as the server then holds them. A second
// CANCEL of the same wait is then refused, as by the service.
type serverAPI struct {
	*lambda.Client
	e *serverExec
}

func (a serverAPI) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	out, err := a.Client.CheckpointDurableExecution(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	a.e.startTimers(in.Updates)
	defer func() {
		if out != nil && out.NewExecutionState != nil {
			a.e.record(out.NewExecutionState.Operations)
		}
	}()
	for _, u := range in.Updates {
		if u.Type != types.OperationTypeWait || u.Action != types.OperationActionCancel {
			continue
		}
		id := aws.ToString(u.Id)
		raw, err := a.e.control("update", map[string]any{"executionId": aws.ToString(in.DurableExecutionArn), "operationId": id,
			"operationData": map[string]any{"Status": "CANCELLED", "EndTimestamp": endNow()}})
		if err != nil {
			return nil, fmt.Errorf("durabletest: settle cancelled wait %s: %w", id, err)
		}
		op, err := decodeOperation(raw)
		if err != nil {
			return nil, err
		}
		if out.NewExecutionState == nil {
			out.NewExecutionState = &types.CheckpointUpdatedExecutionState{}
		}
		ops := out.NewExecutionState.Operations
		i := slices.IndexFunc(ops, func(o types.Operation) bool { return aws.ToString(o.Id) == id })
		if i < 0 {
			ops = append(ops, op)
		} else {
			ops[i] = op
		}
		out.NewExecutionState.Operations = ops
	}
	return out, nil
}

// endNow is the EndTimestamp the driver records when it ends an operation as
// the service's timer side would (a wait elapsed or cancelled, a chained
// invoke answered), in the epoch seconds of the service's JSON protocol.
// UpdateCheckpointData merges only the fields it is given, and an operation
// settled without an end time would sort after every timed one in the
// combinators' "first to settle" order, unlike on the service and the fake.
func endNow() float64 { return float64(time.Now().UnixMicro()) / 1e6 }

// decodeOperation reads the {"Operation": ...} answer of /harness/update, with
// the invocation payload's timestamp conventions.
func decodeOperation(raw []byte) (types.Operation, error) {
	var answer struct{ Operation json.RawMessage }
	if err := json.Unmarshal(raw, &answer); err != nil || len(answer.Operation) == 0 {
		return types.Operation{}, fmt.Errorf("durabletest: harness update answered %s", raw)
	}
	in, err := durable.DecodeInput([]byte(`{"InitialExecutionState":{"Operations":[` + string(answer.Operation) + `]}}`))
	if err != nil {
		return types.Operation{}, err
	}
	return in.InitialExecutionState.Operations[0], nil
}
func (e *serverExec) Now() time.Time   { return time.Now() }
func (e *serverExec) Invocations() int { e.mu.Lock(); defer e.mu.Unlock(); return e.invocations }

// Elapse lets d pass for the execution's callback timers, as Drive lets
// waits and retry delays pass: without sleeping, the driver times out every
// STARTED callback whose timeout, or heartbeat timeout since its start or
// last heartbeat, falls within the time elapsed so far, through
// UpdateCheckpointData (TIMED_OUT), as the service's timer side would. The
// server's own timers run in real time and fire later, if at all before the
// test ends.
func (e *serverExec) Elapse(d time.Duration) {
	e.mu.Lock()
	e.elapsed += d
	now := time.Now().Add(e.elapsed)
	due := map[string]string{} // operation ID -> the server's message for the timeout
	for id, cb := range e.timers {
		switch {
		case cb.timeout > 0 && !now.Before(cb.started.Add(cb.timeout)):
			due[id] = "Callback timed out"
		case cb.heartbeat > 0 && !now.Before(cb.beat.Add(cb.heartbeat)):
			due[id] = "Callback timed out on heartbeat"
		default:
			continue
		}
		delete(e.timers, id)
	}
	e.mu.Unlock()
	ids := make([]string, 0, len(due))
	for id := range due {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		op, ok := Operations(e.allOperations()).ByID(id)
		if !ok || op.Status != types.OperationStatusStarted || op.CallbackDetails == nil {
			continue
		}
		// The details the server's own timers record, callback ID kept.
		// An error means the callback settled meanwhile: nothing to time out.
		_ = e.update(id, map[string]any{"Status": "TIMED_OUT", "EndTimestamp": endNow(), "CallbackDetails": map[string]any{
			"CallbackId": aws.ToString(op.CallbackDetails.CallbackId), "Error": map[string]string{"ErrorMessage": due[id]}}}, nil, nil)
	}
}

// callbackTimer is what the driver knows of a callback's timers.
type callbackTimer struct {
	started, beat      time.Time // on the driver's clock (real time plus elapsed)
	timeout, heartbeat time.Duration
}

// startTimers records the timers of the CALLBACK STARTs among updates.
func (e *serverExec) startTimers(updates []types.OperationUpdate) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now().Add(e.elapsed)
	for _, u := range updates {
		if u.Type != types.OperationTypeCallback || u.Action != types.OperationActionStart || u.CallbackOptions == nil {
			continue
		}
		if e.timers == nil {
			e.timers = map[string]*callbackTimer{}
		}
		e.timers[aws.ToString(u.Id)] = &callbackTimer{started: now, beat: now,
			timeout: time.Duration(u.CallbackOptions.TimeoutSeconds) * time.Second, heartbeat: time.Duration(u.CallbackOptions.HeartbeatTimeoutSeconds) * time.Second}
	}
}

// beat restarts the heartbeat timer of the callback with callback ID id.
func (e *serverExec) beat(callbackID string) {
	for _, op := range e.allOperations() {
		if op.CallbackDetails != nil && aws.ToString(op.CallbackDetails.CallbackId) == callbackID {
			e.mu.Lock()
			if cb := e.timers[aws.ToString(op.Id)]; cb != nil {
				cb.beat = time.Now().Add(e.elapsed)
			}
			e.mu.Unlock()
		}
	}
}

// record keeps the latest version of every operation in ops.
func (e *serverExec) record(ops []types.Operation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]types.Operation{}
	}
	for _, op := range ops {
		id := aws.ToString(op.Id)
		if _, ok := e.seen[id]; !ok {
			e.order = append(e.order, id)
		}
		e.seen[id] = op
	}
}

func (e *serverExec) AllOperations(t testing.TB) []types.Operation {
	e.record(e.Operations(t))
	return e.allOperations()
}

func (e *serverExec) allOperations() []types.Operation {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]types.Operation, 0, len(e.order))
	for _, id := range e.order {
		out = append(out, e.seen[id])
	}
	return out
}

func (e *serverExec) start() (in durable.Input, err error) {
	defer func() {
		if err == nil {
			e.record(in.InitialExecutionState.Operations)
		}
	}()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.invocations++
	if e.next != nil {
		in := *e.next
		e.next, e.lastRaw = nil, e.nextRaw
		return in, nil
	}
	raw, err := e.control("invoke", map[string]any{"executionId": e.arn})
	e.lastRaw = raw
	if err != nil {
		return durable.Input{}, err
	}
	in, inv, err := decode(raw)
	if err != nil {
		return durable.Input{}, err
	}
	e.invocation, e.token = inv, in.CheckpointToken
	return in, nil
}

func (e *serverExec) Input(t testing.TB) durable.Input {
	t.Helper()
	in, err := e.start()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (e *serverExec) Operations(t testing.TB) []types.Operation {
	t.Helper()
	out, err := e.client.GetDurableExecutionState(context.Background(), &lambda.GetDurableExecutionStateInput{
		DurableExecutionArn: aws.String(e.arn), CheckpointToken: aws.String(e.token)})
	if err != nil {
		t.Fatalf("GetDurableExecutionState: %v", err)
	}
	return out.Operations
}

func (e *serverExec) executionID(ops []types.Operation) string {
	for _, op := range ops {
		if op.Type == types.OperationTypeExecution {
			return aws.ToString(op.Id)
		}
	}
	return ""
}

func (e *serverExec) update(id string, data map[string]any, payload *string, eo *types.ErrorObject) error {
	body := map[string]any{"executionId": e.arn, "operationId": id, "operationData": data}
	if payload != nil {
		body["payload"] = *payload
	}
	if eo != nil {
		body["error"] = eo
	}
	_, err := e.control("update", body)
	return err
}

func (e *serverExec) Drive(ctx context.Context, h Invoker, max int) (durable.Output, error) {
	for range max {
		in, err := e.start()
		if err != nil {
			return durable.Output{}, err
		}
		var out durable.Output
		var herr error
		if r, ok := h.(RawInvoker); ok {
			e.mu.Lock()
			raw := e.lastRaw
			e.mu.Unlock()
			out, herr = r.InvokeRaw(ctx, raw)
		} else {
			out, herr = h.Handle(ctx, in)
		}
		var eo any
		if herr != nil {
			eo = map[string]string{"ErrorType": "InvocationError", "ErrorMessage": herr.Error()}
		}
		if _, err := e.control("complete", map[string]any{"executionId": e.arn, "invocationId": e.invocation, "error": eo}); err != nil {
			return durable.Output{}, err
		}
		if herr != nil {
			return out, herr
		}
		state, err := e.client.GetDurableExecutionState(ctx, &lambda.GetDurableExecutionStateInput{
			DurableExecutionArn: aws.String(e.arn), CheckpointToken: aws.String(in.CheckpointToken)})
		if err != nil {
			return durable.Output{}, err
		}
		execID := e.executionID(state.Operations)
		switch out.Status {
		case durable.StatusSucceeded:
			return out, e.update(execID, map[string]any{"Status": "SUCCEEDED"}, out.Result, nil)
		case durable.StatusFailed:
			return out, e.update(execID, map[string]any{"Status": "FAILED"}, nil, out.Error)
		}
		progressed := false
		for _, op := range state.Operations {
			id := aws.ToString(op.Id)
			switch {
			case op.Type == types.OperationTypeWait && op.Status == types.OperationStatusStarted:
				err = e.update(id, map[string]any{"Status": "SUCCEEDED", "EndTimestamp": endNow()}, nil, nil)
			case op.Type == types.OperationTypeStep && op.Status == types.OperationStatusPending:
				err = e.update(id, map[string]any{"Status": "READY"}, nil, nil)
			case op.Type == types.OperationTypeChainedInvoke && op.Status == types.OperationStatusStarted && e.invoke != nil:
				res, ierr := e.invoke(op)
				if ierr != nil {
					err = e.update(id, map[string]any{"Status": "FAILED", "EndTimestamp": endNow(), "ChainedInvokeDetails": map[string]any{
						"Error": map[string]string{"ErrorType": "InvokeError", "ErrorMessage": ierr.Error()}}}, nil, nil)
				} else {
					err = e.update(id, map[string]any{"Status": "SUCCEEDED", "EndTimestamp": endNow(), "ChainedInvokeDetails": map[string]any{"Result": res}}, nil, nil)
				}
			default:
				continue
			}
			if err != nil {
				return durable.Output{}, err
			}
			progressed = true
		}
		if !progressed {
			return out, nil
		}
	}
	return durable.Output{}, fmt.Errorf("durabletest: still pending after %d invocations", max)
}

func (e *serverExec) CompleteCallback(ctx context.Context, id, result string) error {
	_, err := e.client.SendDurableExecutionCallbackSuccess(ctx, &lambda.SendDurableExecutionCallbackSuccessInput{CallbackId: aws.String(id), Result: []byte(result)})
	return err
}

func (e *serverExec) FailCallback(ctx context.Context, id, msg string) error {
	_, err := e.client.SendDurableExecutionCallbackFailure(ctx, &lambda.SendDurableExecutionCallbackFailureInput{CallbackId: aws.String(id),
		Error: &types.ErrorObject{ErrorType: aws.String("CallbackFailed"), ErrorMessage: aws.String(msg)}})
	return err
}

func (e *serverExec) HeartbeatCallback(ctx context.Context, id string) error {
	e.beat(id)
	_, err := e.client.SendDurableExecutionCallbackHeartbeat(ctx, &lambda.SendDurableExecutionCallbackHeartbeatInput{CallbackId: aws.String(id)})
	return err
}
