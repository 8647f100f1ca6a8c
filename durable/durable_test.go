package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/checkpoint"
	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/lambdafake"
	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

const arn = "arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST/durable-execution/run-1/abc"

var start = time.Date(2026, 10, 8, 12, 0, 0, 0, time.UTC)

func handler(t *testing.T, f *lambdafake.Fake, fn durable.Func, opts durable.Options) *durable.Handler {
	t.Helper()
	opts.Now = f.Now
	h, err := durable.NewHandler(f, fn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func statuses(f *lambdafake.Fake) string {
	var parts []string
	for _, op := range f.Operations() {
		parts = append(parts, aws.ToString(op.Name)+"="+string(op.Type)+":"+string(op.Status))
	}
	return strings.Join(parts, " ")
}

func TestStepWaitCallback(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{"order":"o-1","cents":9007199254740993}`), start)
	var logs bytes.Buffer
	charges, submits := 0, 0
	var callbackID string
	fn := func(ctx context.Context, dc *durable.Context, input json.RawMessage) (any, error) {
		var in struct {
			Order string `json:"order"`
			Cents int64  `json:"cents"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		dc.Logger().Info("workflow begins")
		receipt, err := durable.Step(dc, "charge", func(ctx context.Context) (string, error) {
			charges++
			info, _ := durable.InfoFrom(ctx)
			dc.Logger().InfoContext(ctx, "charging", "attempt", info.Attempt)
			return "rcpt-" + in.Order, nil
		})
		if err != nil {
			return nil, err
		}
		dc.Logger().Info("charged")
		if err := dc.Wait("cool-off", 90*time.Second); err != nil {
			return nil, err
		}
		approval, err := durable.WaitForCallback[map[string]any](dc, "approve", time.Hour, func(ctx context.Context, id string) error {
			submits++
			callbackID = id
			return nil
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"receipt": receipt, "approved": approval["ok"], "cents": in.Cents}, nil
	}
	h := handler(t, f, fn, durable.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	out, err := f.Drive(context.Background(), h, 10)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != durable.StatusPending || callbackID == "" {
		t.Fatalf("want PENDING on the callback, got %+v (callback %q)", out, callbackID)
	}
	if got, want := statuses(f), "=EXECUTION:STARTED charge=STEP:SUCCEEDED cool-off=WAIT:SUCCEEDED approve=CALLBACK:STARTED"; got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
	if got := f.Now().Sub(start); got != 90*time.Second {
		t.Errorf("clock advanced %v, want the wait's 90s", got)
	}
	if err := f.CompleteCallback(callbackID, `{"ok":true}`); err != nil {
		t.Fatal(err)
	}
	out, err = f.Drive(context.Background(), h, 10)
	if err != nil || out.Status != durable.StatusSucceeded {
		t.Fatalf("final = %+v, %v", out, err)
	}
	if got, want := aws.ToString(out.Result), `{"approved":true,"cents":9007199254740993,"receipt":"rcpt-o-1"}`; got != want {
		t.Errorf("result = %s, want %s", got, want)
	}
	if charges != 1 || submits != 1 {
		t.Errorf("charge ran %d times, submit %d times; want 1 and 1", charges, submits)
	}
	if f.Invocations != 3 {
		t.Errorf("invocations = %d, want 3 (run, after wait, after callback)", f.Invocations)
	}
	// Replay-aware logging: every line once, although the code before the wait ran three times.
	for _, line := range []string{"workflow begins", "charging", "charged"} {
		if n := strings.Count(logs.String(), line); n != 1 {
			t.Errorf("%q logged %d times, want 1:\n%s", line, n, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "durable.operation_name=charge durable.attempt=1") {
		t.Errorf("step log lacks its operation identity:\n%s", logs.String())
	}
	if err := f.CompleteCallback(callbackID, `{"ok":false}`); err == nil {
		t.Error("a late second answer to a finished callback was accepted")
	}
}

var errDeclined = errors.New("card declined")

func TestStepRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		failures    int
		fatal       bool
		wantStatus  durable.Status
		wantRuns    int
		wantHistory string
	}{
		{"succeeds on third attempt", 2, false, durable.StatusSucceeded, 3, "pay=STEP:SUCCEEDED"},
		{"attempts exhausted", 5, false, durable.StatusFailed, 3, "pay=STEP:FAILED"},
		{"fatal error stops at once", 5, true, durable.StatusFailed, 1, "pay=STEP:FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := lambdafake.New(arn, json.RawMessage(`{}`), start)
			runs := 0
			var attempts []int
			h := handler(t, f, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return durable.Step(dc, "pay", func(ctx context.Context) (int, error) {
					runs++
					info, _ := durable.InfoFrom(ctx)
					attempts = append(attempts, info.Attempt)
					if runs <= tt.failures {
						if tt.fatal {
							return 0, durable.Fatal(errDeclined)
						}
						return 0, errDeclined
					}
					return 42, nil
				})
			}, durable.Options{})
			out, err := f.Drive(context.Background(), h, 10)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tt.wantStatus || runs != tt.wantRuns {
				t.Fatalf("status %s after %d runs, want %s after %d", out.Status, runs, tt.wantStatus, tt.wantRuns)
			}
			for i, a := range attempts {
				if a != i+1 {
					t.Errorf("attempts = %v", attempts)
				}
			}
			if got := statuses(f); !strings.HasSuffix(got, tt.wantHistory) {
				t.Errorf("history %s", got)
			}
			if tt.wantStatus == durable.StatusFailed && !strings.Contains(aws.ToString(out.Error.ErrorMessage), "card declined") {
				t.Errorf("error = %+v", out.Error)
			}
			if tt.name == "succeeds on third attempt" && f.Now().Sub(start) != 3*time.Second {
				t.Errorf("backoff waited %v, want 1s+2s", f.Now().Sub(start))
			}
		})
	}
}

// TestCrashBeforeSucceedCheckpoint: the step's side effect happens, then the
// SUCCEED checkpoint is lost. The invocation fails; the next one finds the step
// STARTED without an outcome and runs it again as attempt 2.
func TestCrashBeforeSucceedCheckpoint(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	crashed := false
	f.FailCheckpoint = func(in *lambda.CheckpointDurableExecutionInput) error {
		if !crashed && len(in.Updates) == 1 && in.Updates[0].Action == types.OperationActionSucceed {
			crashed = true
			return errors.New("connection reset")
		}
		return nil
	}
	effects := 0
	var attempts []int
	h := handler(t, f, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		return durable.Step(dc, "email", func(ctx context.Context) (string, error) {
			effects++
			info, _ := durable.InfoFrom(ctx)
			attempts = append(attempts, info.Attempt)
			return "sent", nil
		})
	}, durable.Options{})
	_, err := f.Drive(context.Background(), h, 5)
	if !errors.Is(err, durable.ErrCheckpoint) {
		t.Fatalf("first invocation: %v, want ErrCheckpoint", err)
	}
	out, err := f.Drive(context.Background(), h, 5)
	if err != nil || out.Status != durable.StatusSucceeded {
		t.Fatal(out, err)
	}
	if effects != 2 || len(attempts) != 2 || attempts[1] != 2 {
		t.Errorf("side effect ran %d times with attempts %v, want 2 times, attempts [1 2]", effects, attempts)
	}
}

func TestCheckpointTokenHandling(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	var seen []string
	fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		for _, name := range []string{"a", "b"} {
			if _, err := durable.Step(dc, name, func(context.Context) (int, error) { return 1, nil }); err != nil {
				return nil, err
			}
		}
		return nil, dc.Wait("w", time.Second)
	}
	recorder := &recordingAPI{API: f, tokens: &seen}
	h, err := durable.NewHandler(recorder, fn, durable.Options{Now: f.Now})
	if err != nil {
		t.Fatal(err)
	}
	stale := f.Input()
	if out, err := h.Handle(context.Background(), stale); err != nil || out.Status != durable.StatusPending {
		t.Fatal(out, err)
	}
	// Each checkpoint consumed the token the previous one returned.
	if want := "token-1 token-2 token-3 token-4 token-5"; strings.Join(seen, " ") != want {
		t.Errorf("tokens used %v, want %s", seen, want)
	}
	// Replaying an old invocation payload after the execution moved on fails with
	// the service's stale-token error rather than writing over newer state.
	f.Advance(time.Hour)
	stale.InitialExecutionState.Operations = stale.InitialExecutionState.Operations[:1]
	_, err = h.Handle(context.Background(), stale)
	var ipv *types.InvalidParameterValueException
	if !errors.Is(err, durable.ErrCheckpoint) || !errors.As(err, &ipv) {
		t.Errorf("stale token: %v", err)
	}
	// A retried checkpoint request (same client token, same consumed token) is deduplicated.
	in := &lambda.CheckpointDurableExecutionInput{DurableExecutionArn: aws.String(arn), CheckpointToken: aws.String(f.Input().CheckpointToken),
		ClientToken: aws.String("c1"), Updates: []types.OperationUpdate{{Id: aws.String("99"), Name: aws.String("x"), Type: types.OperationTypeStep, Action: types.OperationActionStart}}}
	before := f.Checkpoints
	o1, err1 := f.CheckpointDurableExecution(context.Background(), in)
	o2, err2 := f.CheckpointDurableExecution(context.Background(), in)
	if err1 != nil || err2 != nil || aws.ToString(o1.CheckpointToken) != aws.ToString(o2.CheckpointToken) || f.Checkpoints != before+1 {
		t.Errorf("retry not deduplicated: %v %v, %d checkpoints", err1, err2, f.Checkpoints-before)
	}
}

type recordingAPI struct {
	durable.API
	tokens *[]string
}

func (r *recordingAPI) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	*r.tokens = append(*r.tokens, aws.ToString(in.CheckpointToken))
	return r.API.CheckpointDurableExecution(ctx, in, opts...)
}

func TestPaginatedHistory(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	f.PageSize = 2
	runs := 0
	fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		sum := 0
		for i := range 5 {
			v, err := durable.Step(dc, "s", func(context.Context) (int, error) { runs++; return i, nil })
			if err != nil {
				return nil, err
			}
			sum += v
		}
		if err := dc.Wait("w", time.Second); err != nil {
			return nil, err
		}
		return sum, nil
	}
	out, err := f.Drive(context.Background(), handler(t, f, fn, durable.Options{}), 5)
	if err != nil || aws.ToString(out.Result) != "10" {
		t.Fatal(out, err)
	}
	if runs != 5 || f.StateCalls == 0 {
		t.Errorf("runs %d, state calls %d: history was not paged in", runs, f.StateCalls)
	}
}

func TestNondeterminismAndBadInput(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	name := "first"
	fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		if _, err := durable.Step(dc, name, func(context.Context) (int, error) { return 1, nil }); err != nil {
			return nil, err
		}
		return nil, dc.Wait("w", time.Second)
	}
	h := handler(t, f, fn, durable.Options{})
	if _, err := h.Handle(context.Background(), f.Input()); err != nil {
		t.Fatal(err)
	}
	name = "renamed"
	if out, err := h.Handle(context.Background(), f.Input()); err != nil || out.Status != durable.StatusFailed ||
		aws.ToString(out.Error.ErrorType) != "durable.Nondeterministic" {
		t.Errorf("renamed step: %+v %v", out, err)
	}
	for _, payload := range []string{`{`, `{"CheckpointToken":"t"}`, `{"DurableExecutionArn":"a"}`} {
		if _, err := h.Invoke(context.Background(), json.RawMessage(payload)); !errors.Is(err, durable.ErrInvalidInput) {
			t.Errorf("payload %s: %v", payload, err)
		}
	}
	if _, err := durable.NewHandler(nil, fn, durable.Options{}); !errors.Is(err, durable.ErrInvalidInput) {
		t.Error("nil API accepted")
	}
}

func TestCallbackTimeoutAndCancellation(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	h := handler(t, f, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		_, err := durable.WaitForCallback[string](dc, "approve", time.Minute, func(context.Context, string) error { return nil })
		return nil, err
	}, durable.Options{})
	if out, err := f.Drive(context.Background(), h, 5); err != nil || out.Status != durable.StatusPending {
		t.Fatalf("before timeout: %+v %v", out, err)
	}
	f.Advance(2 * time.Minute)
	out, err := f.Drive(context.Background(), h, 5)
	if err != nil || out.Status != durable.StatusFailed || !strings.Contains(aws.ToString(out.Error.ErrorMessage), "TIMED_OUT") {
		t.Fatalf("timeout: %+v %v", out, err)
	}

	// An invocation whose deadline passes mid-step is an invocation error, not a
	// business failure: the step records no outcome and Lambda retries.
	g := lambdafake.New(arn, json.RawMessage(`{}`), start)
	ctx, cancel := context.WithCancel(context.Background())
	h2 := handler(t, g, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		return durable.Step(dc, "slow", func(ctx context.Context) (int, error) { cancel(); return 0, ctx.Err() })
	}, durable.Options{})
	if _, err := h2.Handle(ctx, g.Input()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if got := statuses(g); !strings.HasSuffix(got, "slow=STEP:STARTED") {
		t.Errorf("history after cancellation: %s", got)
	}
}

// TestCrashWithIdempotencyKey repeats the lost-checkpoint crash with the step's
// side effect behind idempotency.Execute keyed by durable.IdempotencyKey: the
// step body runs twice, the effect once.
func TestCrashWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	lost := false
	f.FailCheckpoint = func(in *lambda.CheckpointDurableExecutionInput) error {
		if !lost && in.Updates[0].Action == types.OperationActionSucceed {
			lost = true
			return errors.New("connection reset")
		}
		return nil
	}
	mgr, err := idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{KeyPrefix: "mail", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	bodies, emails := 0, 0
	var keys []string
	h := handler(t, f, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		return durable.Step(dc, "email", func(ctx context.Context) (string, error) {
			bodies++
			key, err := durable.IdempotencyKey(ctx)
			if err != nil {
				return "", err
			}
			keys = append(keys, key)
			return idempotency.Execute(ctx, mgr, map[string]string{"stepKey": key}, func(context.Context) (string, error) {
				emails++
				return "message-1", nil
			})
		})
	}, durable.Options{})
	if _, err := f.Drive(context.Background(), h, 5); !errors.Is(err, durable.ErrCheckpoint) {
		t.Fatalf("first invocation: %v", err)
	}
	out, err := f.Drive(context.Background(), h, 5)
	if err != nil || aws.ToString(out.Result) != `"message-1"` {
		t.Fatal(out, err)
	}
	if bodies != 2 || emails != 1 || keys[0] != keys[1] {
		t.Errorf("step body ran %d times, email sent %d times, keys %v; want 2, 1, equal keys", bodies, emails, keys)
	}
	if _, err := durable.IdempotencyKey(context.Background()); !errors.Is(err, durable.ErrNotInStep) {
		t.Errorf("outside a step: %v", err)
	}
}

// TestCorruptHistory: a step result edited in the service's history is refused by
// the checkpoint integrity sum instead of being fed to the workflow, and a
// history without its EXECUTION operation is invalid input.
func TestCorruptHistory(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	var seen error
	h := handler(t, f, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		v, err := durable.Step(dc, "price", func(context.Context) (int64, error) { return 100, nil })
		if err != nil {
			seen = err
			return nil, err
		}
		return v, dc.Wait("w", time.Second)
	}, durable.Options{})
	if out, err := h.Handle(context.Background(), f.Input()); err != nil || out.Status != durable.StatusPending {
		t.Fatal(out, err)
	}
	in := f.Input()
	for i, op := range in.InitialExecutionState.Operations {
		if aws.ToString(op.Name) == "price" {
			forged := strings.Replace(aws.ToString(op.StepDetails.Result), `"data":100`, `"data":1`, 1)
			in.InitialExecutionState.Operations[i].StepDetails.Result = aws.String(forged)
		}
	}
	out, err := h.Handle(context.Background(), in)
	if err != nil || out.Status != durable.StatusFailed || !errors.Is(seen, checkpoint.ErrTampered) {
		t.Errorf("tampered result: %+v %v, step error %v", out, err, seen)
	}
	in.InitialExecutionState.Operations = in.InitialExecutionState.Operations[1:]
	if _, err := h.Handle(context.Background(), in); !errors.Is(err, durable.ErrInvalidInput) {
		t.Errorf("history without EXECUTION: %v", err)
	}
}

// TestInvocationPayloadWireShape decodes a payload written the way the service
// documents it: PascalCase members and epoch-number timestamps.
func TestInvocationPayloadWireShape(t *testing.T) {
	t.Parallel()
	payload := `{
	  "DurableExecutionArn": "` + arn + `",
	  "CheckpointToken": "token-1",
	  "InitialExecutionState": {
	    "Operations": [
	      {"Id": "execution", "Type": "EXECUTION", "Status": "STARTED", "StartTimestamp": 1791460800.25,
	       "ExecutionDetails": {"InputPayload": "{\"n\":2}"}},
	      {"Id": "1", "Name": "double", "Type": "STEP", "Status": "SUCCEEDED", "StartTimestamp": 1791460800500, "EndTimestamp": "2026-10-08T12:00:01Z",
	       "StepDetails": {"Attempt": 1, "Result": null}}
	    ]
	  }
	}`
	ran := false
	h, err := durable.NewHandler(&recordingAPI{API: lambdafake.New(arn, nil, start), tokens: new([]string)}, func(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
		if _, err := durable.Step(dc, "double", func(context.Context) (int, error) { ran = true; return 0, nil }); err != nil {
			return nil, err
		}
		return json.RawMessage(in), nil
	}, durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), json.RawMessage(payload))
	if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `{"n":2}` || ran {
		t.Fatalf("out %+v, err %v, step re-ran %v", out, err, ran)
	}
	b, _ := json.Marshal(out)
	if string(b) != `{"Status":"SUCCEEDED","Result":"{\"n\":2}"}` {
		t.Errorf("output wire shape %s", b)
	}
	if _, err := h.Invoke(context.Background(), json.RawMessage(`{"DurableExecutionArn":"a","CheckpointToken":"t","InitialExecutionState":{"Operations":[{"Id":"x","StartTimestamp":"yesterday"}]}}`)); !errors.Is(err, durable.ErrInvalidInput) {
		t.Errorf("bad timestamp: %v", err)
	}
}

// TestRejectedCheckpointIsTerminal: an update the service refuses (here a
// payload over its limit) fails the execution instead of being retried forever.
func TestRejectedCheckpointIsTerminal(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(arn, json.RawMessage(`{}`), start)
	f.MaxPayloadBytes = 64
	h := handler(t, f, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		return durable.Step(dc, "big", func(context.Context) (string, error) { return strings.Repeat("x", 100), nil })
	}, durable.Options{})
	out, err := f.Drive(context.Background(), h, 3)
	if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != "durable.CheckpointRejected" ||
		!strings.Contains(aws.ToString(out.Error.ErrorMessage), "limit 64") {
		t.Fatalf("out %+v (%v), err %v", out, out.Error, err)
	}
}
