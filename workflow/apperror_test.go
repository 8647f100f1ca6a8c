package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// QuotaError is a registered error type: it survives the log.
type QuotaError struct {
	Limit int `json:"limit"`
}

func (e *QuotaError) Error() string { return fmt.Sprintf("quota of %d exceeded", e.Limit) }

// Quota is the details payload of an application error.
type Quota struct {
	Used, Limit int
}

// ErrorKinds runs steps failing in different ways and reports what the workflow
// code sees of each failure.
type ErrorKinds struct{}

type errorSeen struct {
	QuotaAs    bool   // errors.As on the registered *QuotaError
	QuotaLimit int    // its decoded field
	QuotaType  string // the ApplicationError's type
	AppType    string
	AppDetails Quota
	AppRetry   bool // the application error was retryable
	PlainType  string
}

func (ErrorKinds) Run(ctx workflow.Context, _ int) (errorSeen, error) {
	var seen errorSeen
	one := workflow.WithMaxAttempts(1)
	_, err := workflow.Step(ctx, "registered", func(context.Context, int) (int, error) {
		return 0, fmt.Errorf("charging: %w", &QuotaError{Limit: 10})
	}, 0, one)
	var q *QuotaError
	if errors.As(err, &q) {
		seen.QuotaAs, seen.QuotaLimit = true, q.Limit
	}
	var app *workflow.ApplicationError
	if errors.As(err, &app) {
		seen.QuotaType = app.Type
	}
	_, err = workflow.Step(ctx, "application", func(context.Context, int) (int, error) {
		return 0, workflow.NewError("quota", "over quota", Quota{Used: 12, Limit: 10})
	}, 0, one)
	if errors.As(err, &app) {
		seen.AppType, seen.AppRetry = app.Type, !app.NonRetryable
		seen.AppDetails, _ = workflow.ErrorDetails[Quota](err)
	}
	_, err = workflow.Step(ctx, "plain", func(context.Context, int) (int, error) {
		return 0, workflow.Fatal(fmt.Errorf("wrapped: %w", errors.New("base")))
	}, 0)
	var se *workflow.StepError
	if errors.As(err, &se) {
		seen.PlainType = se.Info.Type
	}
	// A step error returned from Run fails the run with the step's type.
	_, err = workflow.Step(ctx, "last", func(context.Context, int) (int, error) {
		return 0, &QuotaError{Limit: 3}
	}, 0, one)
	if err != nil {
		return seen, fmt.Errorf("giving up: %w", err)
	}
	return seen, nil
}

func TestApplicationErrorsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, w := range testWorlds {
		for _, cacheOff := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cacheoff=%v", w.name, cacheOff), func(t *testing.T) {
				t.Parallel()
				cfg := workflow.Config{
					ErrorTypes: []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("quota.exceeded")},
					// Every step in a delivery of its own: each outcome is read back
					// from the log, and (without the cache) the workflow replays.
					QueueSteps: true,
					Cache:      workflow.CacheConfig{Disabled: cacheOff},
				}
				world := w.open(t)
				h := serve(t, world, cfg, workflow.Use(ErrorKinds{}))
				run, err := workflow.Start(context.Background(), h.c, ErrorKinds{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = run.Result(resultCtx(t))
				var q *QuotaError
				if !errors.As(err, &q) || q.Limit != 3 {
					t.Fatalf("Result err = %v; want a *QuotaError with Limit 3 through errors.As", err)
				}
				var re *workflow.RunError
				if !errors.As(err, &re) || re.Info.Type != "quota.exceeded" || string(re.Info.Details) != `{"limit":3}` ||
					!strings.HasPrefix(re.Info.Message, "giving up: ") {
					t.Fatalf("run error info = %+v; want the step's registered type and details", re)
				}
				events, err := worlds.AllEvents(context.Background(), world, run.ID())
				if err != nil {
					t.Fatal(err)
				}
				var types []string
				for _, ev := range events {
					if ev.Type == worlds.EventStepFailed {
						types = append(types, ev.Error.Type)
					}
				}
				want := []string{"quota.exceeded", "quota", "*errors.errorString", "quota.exceeded"}
				if fmt.Sprint(types) != fmt.Sprint(want) {
					t.Fatalf("recorded step error types = %v, want %v", types, want)
				}
			})
		}
	}
}

// SeeErrors returns what ErrorKinds' code saw, instead of failing.
type SeeErrors struct{}

func (SeeErrors) Run(ctx workflow.Context, in int) (errorSeen, error) {
	seen, err := ErrorKinds{}.Run(ctx, in)
	if err == nil {
		return seen, errors.New("the last step did not fail")
	}
	return seen, nil
}

func TestApplicationErrorsInWorkflowCode(t *testing.T) {
	t.Parallel()
	for _, w := range testWorlds {
		for _, cacheOff := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cacheoff=%v", w.name, cacheOff), func(t *testing.T) {
				t.Parallel()
				cfg := workflow.Config{
					ErrorTypes: []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("quota.exceeded")},
					QueueSteps: true,
					Cache:      workflow.CacheConfig{Disabled: cacheOff},
				}
				h := serve(t, w.open(t), cfg, workflow.Use(SeeErrors{}))
				run, err := workflow.Start(context.Background(), h.c, SeeErrors{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				got, err := run.Result(resultCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				want := errorSeen{QuotaAs: true, QuotaLimit: 10, QuotaType: "quota.exceeded", AppType: "quota",
					AppDetails: Quota{Used: 12, Limit: 10}, AppRetry: true, PlainType: "*errors.errorString"}
				if got != want {
					t.Fatalf("workflow code saw %+v, want %+v", got, want)
				}
			})
		}
	}
}

func TestNonRetryableApplicationError(t *testing.T) {
	t.Parallel()
	c := &counter{}
	h := serve(t, testWorlds[0].open(t), workflow.Config{}, workflow.Use(NonRetryable{c: c}))
	run, err := workflow.Start(context.Background(), h.c, NonRetryable{c: c}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(resultCtx(t))
	var app *workflow.ApplicationError
	if !errors.As(err, &app) || app.Type != "declined" || !app.NonRetryable || c.get("charge") != 1 {
		t.Fatalf("err = %v, attempts = %d; want one attempt failing with a non-retryable \"declined\"", err, c.get("charge"))
	}
}

// NonRetryable fails its step with a non-retryable application error.
type NonRetryable struct{ c *counter }

func (w NonRetryable) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "charge", func(context.Context, int) (int, error) {
		w.c.inc("charge")
		return 0, workflow.NewNonRetryableError("declined", "card declined", nil)
	}, 0, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond}))
}

func TestErrorTypeRegistration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		types []workflow.ErrorType
		field string
	}{
		{"empty name", []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("")}, "Config.ErrorTypes[0]"},
		{"reserved name", []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("cairn.Quota")}, "Config.ErrorTypes[0]"},
		{"interface", []workflow.ErrorType{workflow.NewErrorType[error]("any")}, "Config.ErrorTypes[0]"},
		{"zero value", []workflow.ErrorType{{}}, "Config.ErrorTypes[0]"},
		{"duplicate name", []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("q"), workflow.NewErrorType[*workflow.StepError]("q")}, "Config.ErrorTypes[1]"},
		{"duplicate type", []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("q1"), workflow.NewErrorType[*QuotaError]("q2")}, "Config.ErrorTypes[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := workflow.NewClient(workflow.Config{World: testWorlds[0].open(t), ErrorTypes: tc.types})
			var ce *workflow.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, workflow.ErrInvalidConfig) {
				t.Fatalf("err = %v, want a ConfigError for %s", err, tc.field)
			}
		})
	}
}

func TestErrorDetails(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("step: %w", workflow.NewError("quota", "over", Quota{Used: 2, Limit: 1}))
	got, derr := workflow.ErrorDetails[Quota](err)
	if derr != nil || got != (Quota{Used: 2, Limit: 1}) {
		t.Fatalf("ErrorDetails = %+v, %v", got, derr)
	}
	if _, derr := workflow.ErrorDetails[Quota](errors.New("x")); !errors.Is(derr, workflow.ErrNoErrorDetails) {
		t.Fatalf("no application error: %v, want ErrNoErrorDetails", derr)
	}
	if _, derr := workflow.ErrorDetails[int](err); !errors.Is(derr, workflow.ErrSerialization) {
		t.Fatalf("wrong details type: %v, want ErrSerialization", derr)
	}
	if err := workflow.NewError("x", "y", func() {}); !errors.Is(err, workflow.ErrSerialization) {
		t.Fatalf("unencodable details: %v, want ErrSerialization", err)
	}
}
