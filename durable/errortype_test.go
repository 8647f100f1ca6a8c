package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// typedError names its own ErrorType.
type typedError struct{}

func (typedError) Error() string     { return "out of stock" }
func (typedError) ErrorType() string { return "OutOfStock" }

// TestErrorTypesAreStable: the ErrorType of a checkpointed failure is the
// error's own ErrorType() or "Error", never a Go type name, however it is
// wrapped; the execution's failure is the official SDKs' name (StepError);
// a live failure still matches the body's error with errors.Is/As.
func TestErrorTypesAreStable(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("declined")
	tests := []struct {
		name     string
		err      error
		recorded string
	}{
		{"errors.New", errors.New("boom"), "Error"},
		{"wrapped", fmt.Errorf("charge: %w", sentinel), "Error"},
		{"Fatal", durable.Fatal(sentinel), "Error"},
		{"ErrorType method", fmt.Errorf("reserve: %w", typedError{}), "OutOfStock"},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			e := b.New(t, json.RawMessage(`{}`), nil)
			var live error
			h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				_, live = durable.StepWith(dc, "s", durable.StepOptions{MaxAttempts: 1}, func(context.Context) (int, error) { return 0, tt.err })
				return nil, live
			}, durable.Options{})
			out, err := e.Drive(context.Background(), h, 2)
			if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != durable.ErrorTypeStep {
				t.Errorf("%s: %+v %v, want FAILED %s", tt.name, out, err, durable.ErrorTypeStep)
				continue
			}
			if !errors.Is(live, tt.err) {
				t.Errorf("%s: live error %v does not match the body's", tt.name, live)
			}
			for _, op := range e.AllOperations(t) {
				if aws.ToString(op.Name) == "s" && aws.ToString(op.StepDetails.Error.ErrorType) != tt.recorded {
					t.Errorf("%s: step recorded ErrorType %q, want %q", tt.name, aws.ToString(op.StepDetails.Error.ErrorType), tt.recorded)
				}
			}
		}
	})
}

// TestCallbackTimeoutSentinel: a timed-out callback's error matches
// durable.ErrTimedOut and is named CallbackTimeoutError, live and replayed.
// The server's real timer is used there (a second).
func TestCallbackTimeoutSentinel(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var seen []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			_, err := durable.WaitForCallback[string](dc, "approve", time.Second, func(context.Context, string) error { return nil })
			var oe *durable.OperationError
			seen = append(seen, fmt.Sprintf("%v %v", errors.Is(err, durable.ErrTimedOut), errors.As(err, &oe) && oe.ErrorType() == durable.ErrorTypeCallbackTimeout))
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		if out, err := e.Drive(context.Background(), h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		e.Elapse(3 * time.Second)
		if out, err := e.Drive(context.Background(), h, 4); err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		if len(seen) != 2 || seen[0] != "true true" || seen[1] != "true true" {
			t.Errorf("timed out, CallbackTimeoutError (live, replayed): %q", seen)
		}
	})
}

// TestCallbackAnswerNotJSON: an answer that is not JSON (the raw text
// "succeeded", as other SDKs and systems send) is readable as a string and
// as []byte, as the official SDKs hand it over; a struct result gets a
// SerdesError, not a failed execution without explanation.
func TestCallbackAnswerNotJSON(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var got []string
		var bad error
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			s, err := durable.CreateCallback[string](dc, "s", durable.CallbackOptions{})
			if err != nil {
				return nil, err
			}
			raw, err := durable.CreateCallback[[]byte](dc, "b", durable.CallbackOptions{})
			if err != nil {
				return nil, err
			}
			st, err := durable.CreateCallback[struct{ OK bool }](dc, "st", durable.CallbackOptions{})
			if err != nil {
				return nil, err
			}
			if err := durable.All(dc, "answers", s, raw, st); err != nil {
				return nil, err
			}
			sv, err := s.Result()
			if err != nil {
				return nil, err
			}
			bv, err := raw.Result()
			if err != nil {
				return nil, err
			}
			_, bad = st.Result()
			got = append(got, sv+"|"+string(bv))
			return sv, nil
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 2); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		for _, op := range e.Operations(t) {
			if op.CallbackDetails != nil {
				answer := "succeeded"
				if aws.ToString(op.Name) == "b" {
					answer = `{"raw":true}`
				}
				if err := e.CompleteCallback(ctx, aws.ToString(op.CallbackDetails.CallbackId), answer); err != nil {
					t.Fatal(err)
				}
			}
		}
		out, err := e.Drive(ctx, h, 2)
		var se *durable.SerdesError
		if err != nil || out.Status != durable.StatusSucceeded || len(got) != 1 || got[0] != `succeeded|{"raw":true}` || !errors.As(bad, &se) {
			t.Errorf("%+v %v: answers %q, struct answer error %v", out, err, got, bad)
		}
	})
}
