package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// Zero fields of a policy take Temporal's defaults: a zero InitialInterval is
// 1s (it used to mean no delay at all), a zero MaxInterval 100 times it.
func TestRetryPolicyZeroValuesBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		p       workflow.RetryPolicy
		attempt int
		want    time.Duration
	}{
		{"zero policy first delay", workflow.RetryPolicy{}, 1, time.Second},
		{"zero policy doubles", workflow.RetryPolicy{}, 3, 4 * time.Second},
		{"zero policy capped at 100x", workflow.RetryPolicy{}, 20, 100 * time.Second},
		{"attempts only", workflow.RetryPolicy{MaxAttempts: 4}, 1, time.Second},
		{"attempts only second delay", workflow.RetryPolicy{MaxAttempts: 4}, 2, 2 * time.Second},
		{"interval only", workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond}, 2, 20 * time.Millisecond},
		{"interval cap 100x", workflow.RetryPolicy{InitialInterval: 10 * time.Millisecond}, 30, time.Second},
		{"explicit cap", workflow.RetryPolicy{InitialInterval: time.Second, MaxInterval: 3 * time.Second, Multiplier: 3}, 2, 3 * time.Second},
		{"multiplier 1", workflow.RetryPolicy{Multiplier: 1}, 9, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.p.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tc.p.Backoff(tc.attempt); got != tc.want {
				t.Fatalf("Backoff(%d) = %s, want %s", tc.attempt, got, tc.want)
			}
		})
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		p     workflow.RetryPolicy
		field string
	}{
		{"negative attempts", workflow.RetryPolicy{MaxAttempts: -1}, "RetryPolicy.MaxAttempts"},
		{"negative interval", workflow.RetryPolicy{InitialInterval: -time.Second}, "RetryPolicy.InitialInterval"},
		{"negative cap", workflow.RetryPolicy{MaxInterval: -time.Second}, "RetryPolicy.MaxInterval"},
		{"cap below initial", workflow.RetryPolicy{InitialInterval: time.Minute, MaxInterval: time.Second}, "RetryPolicy.MaxInterval"},
		{"cap below default initial", workflow.RetryPolicy{MaxInterval: time.Millisecond}, "RetryPolicy.MaxInterval"},
		{"multiplier below 1", workflow.RetryPolicy{Multiplier: 0.5}, "RetryPolicy.Multiplier"},
		{"multiplier NaN", workflow.RetryPolicy{Multiplier: math.NaN()}, "RetryPolicy.Multiplier"},
		{"multiplier Inf", workflow.RetryPolicy{Multiplier: math.Inf(1)}, "RetryPolicy.Multiplier"},
		{"empty type name", workflow.RetryPolicy{NonRetryableErrorTypes: []string{"a", ""}}, "RetryPolicy.NonRetryableErrorTypes[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ce *workflow.ConfigError
			if err := tc.p.Validate(); !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, workflow.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want a ConfigError for %s", err, tc.field)
			}
			// The same policy as the client's default is refused by NewClient, not
			// by the first run that reaches a step.
			p := tc.p
			_, err := workflow.NewClient(workflow.Config{World: testWorlds[0].open(t), RetryPolicy: &p})
			if !errors.As(err, &ce) || ce.Field != "Config."+tc.field {
				t.Fatalf("NewClient = %v, want a ConfigError for Config.%s", err, tc.field)
			}
		})
	}
}

// Flaky fails its step Fail times, then succeeds, with the policy it is given.
type Flaky struct {
	c      *counter
	fail   int
	policy *workflow.RetryPolicy // nil: no WithRetry
	err    func() error
}

func (w Flaky) Run(ctx workflow.Context, _ int) (int, error) {
	var opts []workflow.StepOption
	if w.policy != nil {
		opts = append(opts, workflow.WithRetry(*w.policy))
	}
	return workflow.Step(ctx, "flaky", func(context.Context, int) (int, error) {
		n := w.c.inc("flaky")
		if n <= w.fail {
			if w.err != nil {
				return 0, w.err()
			}
			return 0, fmt.Errorf("attempt %d: %w", n, errors.New("flaky"))
		}
		return n, nil
	}, 0, opts...)
}

func (Flaky) WorkflowName() string { return "flaky" }

func TestRetryPolicyAtRuntime(t *testing.T) {
	t.Parallel()
	fastZero := workflow.RetryPolicy{InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond}
	tests := []struct {
		name     string
		client   *workflow.RetryPolicy
		policy   *workflow.RetryPolicy
		fail     int
		err      func() error
		attempts int
		failed   bool
	}{
		// Zero MaxAttempts is unlimited: the step goes on past the default 3.
		{"zero attempts unlimited", nil, &fastZero, 6, nil, 7, false},
		// No WithRetry keeps the client default, 3 attempts.
		{"no policy 3 attempts", &workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}, nil, 6, nil, 3, true},
		{"non-retryable application type", nil, &workflow.RetryPolicy{InitialInterval: time.Millisecond, NonRetryableErrorTypes: []string{"declined"}}, 6,
			func() error { return workflow.NewError("declined", "card declined", nil) }, 1, true},
		{"non-retryable Go type through %w", nil, &workflow.RetryPolicy{InitialInterval: time.Millisecond, NonRetryableErrorTypes: []string{"*errors.errorString"}}, 6,
			nil, 1, true},
		{"other types retried", nil, &workflow.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Millisecond, NonRetryableErrorTypes: []string{"declined"}}, 2,
			nil, 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &counter{}
			wf := Flaky{c: c, fail: tc.fail, policy: tc.policy, err: tc.err}
			h := serve(t, testWorlds[1].open(t), workflow.Config{RetryPolicy: tc.client}, workflow.Use(wf))
			run, err := workflow.Start(context.Background(), h.c, wf, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run.Result(resultCtx(t))
			if (err != nil) != tc.failed || c.get("flaky") != tc.attempts {
				t.Fatalf("err = %v after %d attempts; want failed=%v after %d", err, c.get("flaky"), tc.failed, tc.attempts)
			}
			if tc.failed {
				step, gerr := h.w.GetStep(context.Background(), run.ID(), "step_1")
				if gerr != nil || step.Status != worlds.StepFailed {
					t.Fatalf("step = %+v, %v; want failed", step, gerr)
				}
			}
		})
	}
}
