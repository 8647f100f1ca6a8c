// Package durableidem runs an external call inside a Lambda durable step
// through cairn's idempotency package, keyed by the step: the execution ARN
// and the operation ID (durable.IdempotencyKey), never the request ID, the
// attempt or the invocation. A step whose call succeeded but whose SUCCEED
// checkpoint was lost runs again in a later invocation; the call then returns
// the response the idempotency store recorded instead of repeating its effect.
//
// It is the durable-functions side of workflow/workflowidem: the same payload
// ({"stepKey", "input"}), so one idempotency.Manager (EventKeyJMESPath
// "stepKey", PayloadValidationJMESPath "input") and one DynamoDB or Redis
// store serve Go workflow steps and durable steps, whose keys never collide.
// The store holds the call's response only; the execution's progress stays
// in the service's checkpoints, and the execution ARN, operation ID and
// attempt stay separate attributes of the step's context (durable.InfoFrom)
// and of its log records.
package durableidem

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowidem"
)

// Do runs fn(ctx, in) at most once for the durable step whose context ctx is,
// while m's record is valid, and returns its result, replayed from m's store
// when the step runs again. Call it inside the step's function. Outside a step
// it returns an error matching durable.ErrNotInStep, and a record whose input
// differs from in fails the step for good (idempotency.ErrValidation), both
// wrapped with durable.Fatal; other errors are retried as the step's are.
func Do[I, O any](ctx context.Context, m *idempotency.Manager, in I, fn func(context.Context, I) (O, error)) (O, error) {
	key, err := durable.IdempotencyKey(ctx)
	if err != nil {
		var zero O
		return zero, durable.Fatal(fmt.Errorf("durableidem: %w", err))
	}
	out, err := workflowidem.DoKeyed(ctx, m, key, in, fn)
	if workflow.IsFatal(err) {
		// A record whose input does not match cannot succeed on a retry.
		return out, durable.Fatal(err)
	}
	return out, err
}
