package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
)

// Intercepted runs one step, "double", with two attempts at most.
type Intercepted struct{}

func (Intercepted) Run(ctx workflow.Context, n int) (int, error) {
	return workflow.Step(ctx, "double", func(_ context.Context, n int) (int, error) { return 2 * n, nil }, n,
		workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
}

func TestStepInterceptor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		intercept func(next workflow.StepFunc, ctx context.Context, in json.RawMessage) (json.RawMessage, error)
		want      int
		wantErr   string
		attempts  int
	}{
		{name: "pass through", want: 42, attempts: 1,
			intercept: func(next workflow.StepFunc, ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				return next(ctx, in)
			}},
		{name: "replace the output", want: 7, attempts: 1,
			intercept: func(workflow.StepFunc, context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage("7"), nil
			}},
		{name: "fail every attempt", wantErr: "stubbed failure", attempts: 2,
			intercept: func(workflow.StepFunc, context.Context, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New("stubbed failure")
			}},
		{name: "panic is a retryable error", wantErr: "panic: boom", attempts: 2,
			intercept: func(workflow.StepFunc, context.Context, json.RawMessage) (json.RawMessage, error) {
				panic("boom")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen []workflow.Info
			cfg := workflow.Config{StepInterceptor: func(ctx context.Context, info workflow.Info, in json.RawMessage, next workflow.StepFunc) (json.RawMessage, error) {
				mu.Lock()
				seen = append(seen, info)
				mu.Unlock()
				if string(in) != "21" {
					t.Errorf("interceptor got input %s, want 21", in)
				}
				return tt.intercept(next, ctx, in)
			}}
			h := serve(t, memworld.New(), cfg, workflow.Use(Intercepted{}))
			run, err := workflow.Start(context.Background(), h.c, Intercepted{}, 21)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(resultCtx(t))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Result = %d, %v; want an error containing %q", got, err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Result = %d, %v; want %d", got, err, tt.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != tt.attempts {
				t.Fatalf("interceptor saw %d attempts, want %d", len(seen), tt.attempts)
			}
			for i, info := range seen {
				if info.StepName != "double" || info.StepID != "step_1" || info.Attempt != i+1 || info.RunID != run.ID() {
					t.Fatalf("attempt %d: info %+v", i+1, info)
				}
			}
		})
	}
}
