package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/checkpoint"
	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
	"github.com/cairn-go/cairn/durable/lambdafake"
	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

// Every test that drives an execution runs on both backends: cairn's lambdafake
// and AWS's local checkpoint server (durabletest.Run skips the latter, saying
// so, when DURABLE_CHECKPOINT_ENDPOINT is unset).

func newHandler(t *testing.T, e durabletest.Execution, fn durable.Func, opts durable.Options) *durable.Handler {
	t.Helper()
	return newHandlerAPI(t, e, e.API(), fn, opts)
}

func newHandlerAPI(t *testing.T, e durabletest.Execution, api durable.API, fn durable.Func, opts durable.Options) *durable.Handler {
	t.Helper()
	opts.Now = e.Now
	h, err := durable.NewHandler(api, fn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// statuses lists the top-level operations other than the execution itself.
func statuses(t *testing.T, e durabletest.Execution) string {
	t.Helper()
	var parts []string
	for _, op := range e.Operations(t) {
		if op.Type == types.OperationTypeExecution || aws.ToString(op.ParentId) != "" {
			continue
		}
		parts = append(parts, aws.ToString(op.Name)+"="+string(op.Type)+":"+string(op.Status))
	}
	return strings.Join(parts, " ")
}

// lossyAPI loses the first checkpoint lost selects: the request never reaches the
// service, as when the process dies or the connection drops before it is applied.
type lossyAPI struct {
	durable.API
	mu   sync.Mutex
	lost bool
	lose func(in *lambda.CheckpointDurableExecutionInput) bool
}

func (l *lossyAPI) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	l.mu.Lock()
	if !l.lost && l.lose(in) {
		l.lost = true
		l.mu.Unlock()
		return nil, errors.New("connection reset")
	}
	l.mu.Unlock()
	return l.API.CheckpointDurableExecution(ctx, in, opts...)
}

func TestStepWaitCallback(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{"order":"o-1","cents":9007199254740993}`), nil)
		var logs bytes.Buffer
		var mu sync.Mutex
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
				mu.Lock()
				defer mu.Unlock()
				submits++
				callbackID = id
				return nil
			})
			if err != nil {
				return nil, err
			}
			return map[string]any{"receipt": receipt, "approved": approval["ok"], "cents": in.Cents}, nil
		}
		h := newHandler(t, e, fn, durable.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		out, err := e.Drive(context.Background(), h, 10)
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != durable.StatusPending || callbackID == "" {
			t.Fatalf("want PENDING on the callback, got %+v (callback %q)", out, callbackID)
		}
		if got, want := statuses(t, e), "charge=STEP:SUCCEEDED cool-off=WAIT:SUCCEEDED approve=CONTEXT:STARTED"; got != want {
			t.Fatalf("history:\n got %s\nwant %s", got, want)
		}
		if f := durabletest.Fake(e); f != nil {
			if got := f.Now().Sub(f.Operations()[0].StartTimestamp.UTC()); got != 90*time.Second {
				t.Errorf("clock advanced %v, want the wait's 90s", got)
			}
		}
		if err := e.CompleteCallback(context.Background(), callbackID, `{"ok":true}`); err != nil {
			t.Fatal(err)
		}
		out, err = e.Drive(context.Background(), h, 10)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("final = %+v, %v", out, err)
		}
		if got, want := aws.ToString(out.Result), `{"approved":true,"cents":9007199254740993,"receipt":"rcpt-o-1"}`; got != want {
			t.Errorf("result = %s, want %s", got, want)
		}
		if charges != 1 || submits != 1 {
			t.Errorf("charge ran %d times, submit %d times; want 1 and 1", charges, submits)
		}
		if n := e.Invocations(); n != 3 {
			t.Errorf("invocations = %d, want 3 (run, after wait, after callback)", n)
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
		// A late second answer: the fake refuses it; AWS's local server accepts it
		// (it does not check that the callback is still open), so it is not asserted there.
		if f := durabletest.Fake(e); f != nil {
			if err := f.CompleteCallback(callbackID, `{"ok":false}`); err == nil {
				t.Error("a late second answer to a finished callback was accepted")
			}
		}
	})
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
			durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
				e := b.New(t, json.RawMessage(`{}`), nil)
				runs := 0
				var attempts []int
				h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
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
				began := e.Now()
				out, err := e.Drive(context.Background(), h, 10)
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
				if got := statuses(t, e); got != tt.wantHistory {
					t.Errorf("history %s, want %s", got, tt.wantHistory)
				}
				if tt.wantStatus == durable.StatusFailed && !strings.Contains(aws.ToString(out.Error.ErrorMessage), "card declined") {
					t.Errorf("error = %+v", out.Error)
				}
				if f := durabletest.Fake(e); f != nil && tt.name == "succeeds on third attempt" && f.Now().Sub(began) != 3*time.Second {
					t.Errorf("backoff waited %v, want 1s+2s", f.Now().Sub(began))
				}
			})
		})
	}
}

// TestCrashBeforeSucceedCheckpoint: the step's side effect happens, then the
// SUCCEED checkpoint is lost. The invocation fails; the next one finds the step
// STARTED without an outcome and runs its body again without a second START
// (which the service refuses for a STARTED step). The attempt number is the
// service's (finished attempts + 1), so the re-run is attempt 1 again, as in
// the official SDKs; the live-attempt counter sees two runs.
func TestCrashBeforeSucceedCheckpoint(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		api := &lossyAPI{API: e.API(), lose: func(in *lambda.CheckpointDurableExecutionInput) bool {
			return len(in.Updates) == 1 && in.Updates[0].Action == types.OperationActionSucceed
		}}
		effects := 0
		var attempts []int
		var starts int
		h := newHandlerAPI(t, e, &countingAPI{API: api, starts: &starts}, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.Step(dc, "charge", func(ctx context.Context) (int, error) {
				effects++
				info, _ := durable.InfoFrom(ctx)
				attempts = append(attempts, info.Attempt)
				return 7, nil
			})
		}, durable.Options{})
		_, err := e.Drive(context.Background(), h, 5)
		if !errors.Is(err, durable.ErrCheckpoint) {
			t.Fatalf("first invocation: %v, want ErrCheckpoint", err)
		}
		if got := statuses(t, e); got != "charge=STEP:STARTED" {
			t.Fatalf("after the crash: %s", got)
		}
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatal(out, err)
		}
		if effects != 2 || starts != 1 || len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 1 {
			t.Errorf("side effect ran %d times (attempts %v) after %d STARTs, want 2 runs, attempts [1 1], 1 START", effects, attempts, starts)
		}
	})
}

type countingAPI struct {
	durable.API
	starts *int
	tokens *[]string
	next   string
	stale  bool
}

func (c *countingAPI) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	for _, u := range in.Updates {
		if u.Action == types.OperationActionStart && c.starts != nil {
			*c.starts++
		}
	}
	if c.tokens != nil {
		*c.tokens = append(*c.tokens, aws.ToString(in.CheckpointToken))
		if c.next != "" && c.next != aws.ToString(in.CheckpointToken) {
			c.stale = true
		}
	}
	out, err := c.API.CheckpointDurableExecution(ctx, in, opts...)
	if err == nil {
		c.next = aws.ToString(out.CheckpointToken)
	}
	return out, err
}

func TestCheckpointTokenHandling(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			for _, name := range []string{"a", "b"} {
				if _, err := durable.Step(dc, name, func(context.Context) (int, error) { return 1, nil }); err != nil {
					return nil, err
				}
			}
			return nil, dc.Wait("w", time.Second)
		}
		var seen []string
		rec := &countingAPI{API: e.API(), tokens: &seen}
		h := newHandlerAPI(t, e, rec, fn, durable.Options{})
		in := e.Input(t)
		if out, err := h.Handle(context.Background(), in); err != nil || out.Status != durable.StatusPending {
			t.Fatal(out, err)
		}
		// Each checkpoint consumed the token the previous one returned, starting
		// with the invocation's.
		if len(seen) != 5 || seen[0] != in.CheckpointToken || rec.stale {
			t.Errorf("tokens used %v (invocation token %s), a stale one: %v", seen, in.CheckpointToken, rec.stale)
		}
		f := durabletest.Fake(e)
		if f == nil {
			// AWS's local server decodes tokens but does not reject stale ones or
			// deduplicate client tokens; the service's behaviour is modelled by the
			// fake only and asserted below.
			return
		}
		// Replaying an old invocation payload after the execution moved on fails with
		// the stale-token error rather than writing over newer state.
		f.Advance(time.Hour)
		in.InitialExecutionState.Operations = in.InitialExecutionState.Operations[:1]
		_, err := h.Handle(context.Background(), in)
		var ipv *types.InvalidParameterValueException
		if !errors.Is(err, durable.ErrCheckpoint) || !errors.As(err, &ipv) {
			t.Errorf("stale token: %v", err)
		}
		// A retried checkpoint request (same client token, same consumed token) is deduplicated.
		req := &lambda.CheckpointDurableExecutionInput{DurableExecutionArn: aws.String(durabletest.FakeARN), CheckpointToken: aws.String(f.Input().CheckpointToken),
			ClientToken: aws.String("c1"), Updates: []types.OperationUpdate{{Id: aws.String("99"), Name: aws.String("x"), Type: types.OperationTypeStep, Action: types.OperationActionStart}}}
		before := f.Checkpoints
		o1, err1 := f.CheckpointDurableExecution(context.Background(), req)
		o2, err2 := f.CheckpointDurableExecution(context.Background(), req)
		if err1 != nil || err2 != nil || aws.ToString(o1.CheckpointToken) != aws.ToString(o2.CheckpointToken) || f.Checkpoints != before+1 {
			t.Errorf("retry not deduplicated: %v %v, %d checkpoints", err1, err2, f.Checkpoints-before)
		}
	})
}

// TestPaginatedHistory runs on the fake only: AWS's local server returns the
// whole history in one page, so paging cannot be exercised there.
func TestPaginatedHistory(t *testing.T) {
	t.Parallel()
	f := lambdafake.New(durabletest.FakeARN, json.RawMessage(`{}`), time.Unix(0, 0))
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
	h, err := durable.NewHandler(f, fn, durable.Options{Now: f.Now})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Drive(context.Background(), h, 5)
	if err != nil || aws.ToString(out.Result) != "10" {
		t.Fatal(out, err)
	}
	if runs != 5 || f.StateCalls == 0 {
		t.Errorf("runs %d, state calls %d: history was not paged in", runs, f.StateCalls)
	}
}

func TestNondeterminismAndBadInput(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		name := "first"
		fn := func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			if _, err := durable.Step(dc, name, func(context.Context) (int, error) { return 1, nil }); err != nil {
				return nil, err
			}
			return nil, dc.Wait("w", time.Second)
		}
		h := newHandler(t, e, fn, durable.Options{})
		if _, err := h.Handle(context.Background(), e.Input(t)); err != nil {
			t.Fatal(err)
		}
		name = "renamed"
		if out, err := h.Handle(context.Background(), e.Input(t)); err != nil || out.Status != durable.StatusFailed ||
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
	})
}

func TestCallbackTimeoutAndCancellation(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, err := durable.WaitForCallback[string](dc, "approve", time.Second, func(context.Context, string) error { return nil })
			return nil, err
		}, durable.Options{})
		if out, err := e.Drive(context.Background(), h, 5); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("before timeout: %+v %v", out, err)
		}
		e.Elapse(3 * time.Second)
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != durable.ErrorTypeCallbackTimeout ||
			aws.ToString(out.Error.ErrorMessage) != "Callback timed out" {
			t.Fatalf("timeout: %+v %v", out, err)
		}

		// An invocation whose deadline passes mid-step is an invocation error, not a
		// business failure: the step records no outcome and Lambda retries.
		g := b.New(t, json.RawMessage(`{}`), nil)
		ctx, cancel := context.WithCancel(context.Background())
		h2 := newHandler(t, g, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.Step(dc, "slow", func(ctx context.Context) (int, error) { cancel(); return 0, ctx.Err() })
		}, durable.Options{})
		if _, err := h2.Handle(ctx, g.Input(t)); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
		if got := statuses(t, g); got != "slow=STEP:STARTED" {
			t.Errorf("history after cancellation: %s", got)
		}
	})
}

// TestWaitForCallbackSubmitter (7.2.2): the submitter is a step of the
// WaitForCallback child context, as in the official SDKs. A failed submit is
// retried with the same callback ID; a process that dies after creating the
// callback, before submit's outcome is checkpointed, runs submit again in the
// next invocation instead of leaving the callback unsent for ever.
func TestWaitForCallbackSubmitter(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range []struct {
			name     string
			failures int                                                   // submit attempts that fail
			lose     func(in *lambda.CheckpointDurableExecutionInput) bool // the checkpoint the crash loses
		}{
			{"retried", 1, nil},
			{"crash before submit", 0, func(in *lambda.CheckpointDurableExecutionInput) bool {
				return in.Updates[0].Type == types.OperationTypeStep && in.Updates[0].Action == types.OperationActionStart
			}},
			{"crash after submit", 0, func(in *lambda.CheckpointDurableExecutionInput) bool {
				return in.Updates[0].Type == types.OperationTypeStep && in.Updates[0].Action == types.OperationActionSucceed
			}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				e := b.New(t, json.RawMessage(`{}`), nil)
				var api durable.API = e.API()
				if tt.lose != nil {
					api = &lossyAPI{API: api, lose: tt.lose}
				}
				var sent []string
				h := newHandlerAPI(t, e, api, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					return durable.WaitForCallbackWith[string](dc, "approve", durable.CallbackOptions{
						Timeout: time.Hour,
						Submit:  durable.StepOptions{MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Second }},
					}, func(ctx context.Context, id string) error {
						sent = append(sent, id)
						if len(sent) <= tt.failures {
							return errors.New("mail server down")
						}
						return nil
					})
				}, durable.Options{})
				ctx := context.Background()
				out, err := e.Drive(ctx, h, 5)
				if tt.lose != nil {
					if !errors.Is(err, durable.ErrCheckpoint) {
						t.Fatalf("lost checkpoint: %+v %v", out, err)
					}
					out, err = e.Drive(ctx, h, 5) // Lambda retries the invocation
				}
				if err != nil || out.Status != durable.StatusPending {
					t.Fatalf("%+v %v", out, err)
				}
				want := 1 + tt.failures
				if tt.name == "crash after submit" {
					want = 2 // at least once: the success was not checkpointed
				}
				if len(sent) != want {
					t.Fatalf("submit ran %d times, want %d", len(sent), want)
				}
				for _, id := range sent[1:] {
					if id != sent[0] {
						t.Errorf("submit attempts got callback IDs %v, want one", sent)
					}
				}
				if err := e.CompleteCallback(ctx, sent[0], `"yes"`); err != nil {
					t.Fatal(err)
				}
				out, err = e.Drive(ctx, h, 5)
				if err != nil || aws.ToString(out.Result) != `"yes"` || len(sent) != want {
					t.Fatalf("%+v %v, submit ran %d times", out, err, len(sent))
				}
				if got := statuses(t, e); got != "approve=CONTEXT:SUCCEEDED" {
					t.Errorf("history: %s", got)
				}
			})
		}
	})
}

// TestWaitForCallbackFailureReplays: a failed callback's error, returned
// live and again by a replay of the WaitForCallback context, has the same name,
// type, message and data.
func TestWaitForCallbackFailureReplays(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var id string
		var seen []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, err := durable.WaitForCallback[string](dc, "approve", time.Hour, func(_ context.Context, cb string) error { id = cb; return nil })
			var oe *durable.OperationError
			if !errors.As(err, &oe) {
				return nil, fmt.Errorf("want an *OperationError, got %v", err)
			}
			seen = append(seen, fmt.Sprintf("%s|%s|%s|%s", oe.Name, oe.Type, oe.Message, oe.Data))
			return seen, dc.Wait("after", time.Second)
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := e.FailCallback(ctx, id, "declined"); err != nil {
			t.Fatal(err)
		}
		out, err := e.Drive(ctx, h, 4)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		if len(seen) != 2 || seen[0] != seen[1] || !strings.HasPrefix(seen[0], "approve|CallbackExternalError|declined") {
			t.Errorf("live and replayed errors: %q", seen)
		}
	})
}

// TestWaitForCallbackEarlierLayout: an execution that an earlier version of
// this package began, with WaitForCallback's callback recorded directly in
// the parent context, finishes with the current code, without running
// submit again.
func TestWaitForCallbackEarlierLayout(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var id string
		old := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			// What the earlier WaitForCallback recorded: the CALLBACK itself.
			cb, err := durable.CreateCallback[string](dc, "approve", durable.CallbackOptions{Timeout: time.Hour})
			if err != nil {
				return nil, err
			}
			id = cb.ID()
			return cb.Result()
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, old, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := e.CompleteCallback(ctx, id, `"yes"`); err != nil {
			t.Fatal(err)
		}
		submits := 0
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.WaitForCallback[string](dc, "approve", time.Hour, func(context.Context, string) error { submits++; return nil })
		}, durable.Options{})
		out, err := e.Drive(ctx, h, 3)
		if err != nil || aws.ToString(out.Result) != `"yes"` || submits != 0 {
			t.Fatalf("%+v %v, submit ran %d times", out, err, submits)
		}
	})
}

// TestCallbackHeartbeat: a callback with a heartbeat timeout stays open while
// the answering system sends heartbeats, and times out when they stop.
func TestCallbackHeartbeat(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, beat := range []bool{true, false} {
			e := b.New(t, json.RawMessage(`{}`), nil)
			var id string
			h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return durable.WaitForCallbackWith[string](dc, "job", durable.CallbackOptions{Timeout: time.Hour, HeartbeatTimeout: 2 * time.Second},
					func(_ context.Context, cb string) error { id = cb; return nil })
			}, durable.Options{})
			if out, err := e.Drive(context.Background(), h, 5); err != nil || out.Status != durable.StatusPending {
				t.Fatal(out, err)
			}
			for range 4 {
				e.Elapse(700 * time.Millisecond)
				if beat {
					if err := e.HeartbeatCallback(context.Background(), id); err != nil {
						t.Fatalf("heartbeat: %v", err)
					}
				}
			}
			if beat {
				if err := e.CompleteCallback(context.Background(), id, `"done"`); err != nil {
					t.Fatal(err)
				}
			}
			out, err := e.Drive(context.Background(), h, 5)
			switch {
			case err != nil:
				t.Fatal(err)
			case beat && (out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"done"`):
				t.Errorf("with heartbeats: %+v", out)
			case !beat && (out.Status != durable.StatusFailed || !strings.Contains(aws.ToString(out.Error.ErrorMessage), "heartbeat")):
				t.Errorf("without heartbeats: %+v %v", out, out.Error)
			}
		}
	})
}

// TestCrashWithIdempotencyKey repeats the lost-checkpoint crash with the step's
// side effect behind idempotency.Execute keyed by durable.IdempotencyKey: the
// step body runs twice, the effect once.
func TestCrashWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		api := &lossyAPI{API: e.API(), lose: func(in *lambda.CheckpointDurableExecutionInput) bool {
			return in.Updates[0].Action == types.OperationActionSucceed
		}}
		mgr, err := idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{KeyPrefix: "mail", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		bodies, emails := 0, 0
		var keys []string
		h := newHandlerAPI(t, e, api, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
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
		if _, err := e.Drive(context.Background(), h, 5); !errors.Is(err, durable.ErrCheckpoint) {
			t.Fatalf("first invocation: %v", err)
		}
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || aws.ToString(out.Result) != `"message-1"` {
			t.Fatal(out, err)
		}
		if bodies != 2 || emails != 1 || keys[0] != keys[1] {
			t.Errorf("step body ran %d times, email sent %d times, keys %v; want 2, 1, equal keys", bodies, emails, keys)
		}
		if _, err := durable.IdempotencyKey(context.Background()); !errors.Is(err, durable.ErrNotInStep) {
			t.Errorf("outside a step: %v", err)
		}
	})
}

// TestCorruptHistory: a step result edited in the service's history is refused,
// under the opt-in EnvelopeSerdes, by the checkpoint integrity sum instead of being fed to the workflow, and a
// history without its EXECUTION operation is invalid input.
func TestCorruptHistory(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var seen error
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			v, err := durable.Step(dc, "price", func(context.Context) (int64, error) { return 100, nil })
			if err != nil {
				seen = err
				return nil, err
			}
			return v, dc.Wait("w", time.Hour)
		}, durable.Options{Serdes: envelopeSerdes(t)})
		if out, err := h.Handle(context.Background(), e.Input(t)); err != nil || out.Status != durable.StatusPending {
			t.Fatal(out, err)
		}
		in := e.Input(t)
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
		var rest []types.Operation
		for _, op := range in.InitialExecutionState.Operations {
			if op.Type != types.OperationTypeExecution {
				rest = append(rest, op)
			}
		}
		in.InitialExecutionState.Operations = rest
		if _, err := h.Handle(context.Background(), in); !errors.Is(err, durable.ErrInvalidInput) {
			t.Errorf("history without EXECUTION: %v", err)
		}
	})
}

// TestInvocationPayloadWireShape decodes a payload written the way the service
// documents it: PascalCase members and epoch-number timestamps. It needs no
// backend: the payload is given.
func TestInvocationPayloadWireShape(t *testing.T) {
	t.Parallel()
	payload := `{
	  "DurableExecutionArn": "` + durabletest.FakeARN + `",
	  "CheckpointToken": "token-1",
	  "InitialExecutionState": {
	    "Operations": [
	      {"Id": "execution", "Type": "EXECUTION", "Status": "STARTED", "StartTimestamp": 1791460800.25,
	       "ExecutionDetails": {"InputPayload": "{\"n\":2}"}},
	      {"Id": "` + durable.OperationID("1") + `", "Name": "double", "Type": "STEP", "Status": "SUCCEEDED", "StartTimestamp": 1791460800500, "EndTimestamp": "2026-10-08T12:00:01Z",
	       "StepDetails": {"Attempt": 1, "Result": null}}
	    ]
	  }
	}`
	ran := false
	h, err := durable.NewHandler(lambdafake.New(durabletest.FakeARN, nil, time.Unix(0, 0)), func(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
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

// TestRejectedCheckpointIsTerminal: an update the service refuses (here a step
// failure over the service's 32 KB limit for an update carrying an error: the
// error object is shortened to fit, but the step's name is 33 KB) fails the
// execution instead of being retried forever.
func TestRejectedCheckpointIsTerminal(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.Step(dc, strings.Repeat("n", 33000), func(context.Context) (string, error) {
				return "", durable.Fatal(errors.New("no"))
			})
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 3)
		if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != "durable.CheckpointRejected" ||
			!strings.Contains(aws.ToString(out.Error.ErrorMessage), "Error object size must be less than 32768 bytes") {
			t.Fatalf("out %+v (%v), err %v", out, out.Error, err)
		}
	})
}
