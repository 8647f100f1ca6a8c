package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
)

// StepFunc runs one attempt of a step on its JSON input and returns its JSON
// output.
type StepFunc func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// StepInterceptor wraps every step attempt a [Client]'s runtime runs, inline or in
// a step delivery. It receives the attempt's context, its identity (info.StepName,
// info.Attempt) and JSON input, and next, which runs the step's own function; what
// it returns is the attempt's outcome, recorded as if the step had returned it. The
// output must be valid JSON (a World refuses anything else, failing the step).
// Test kits use it to stub or spy on steps by name; it must be safe for concurrent
// use. A panic in the interceptor is recovered as a retryable *[PanicError].
type StepInterceptor func(ctx context.Context, info Info, input json.RawMessage, next StepFunc) (json.RawMessage, error)

// callStep runs one attempt of c through the configured interceptor, if any.
func (e *engine) callStep(ctx context.Context, info Info, c *captured, input json.RawMessage) (out json.RawMessage, err error) {
	if e.intercept == nil {
		return c.call(ctx, input)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	return e.intercept(ctx, info, input, StepFunc(c.call))
}
