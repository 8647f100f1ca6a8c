// Package workflowidem runs a workflow step's external call through the
// idempotency package, keyed by the step itself: the run ID and the step's ID
// in its run (workflow/stepkey), not the attempt. A step that made its call,
// then died before its outcome reached the run's log (a crash, a lost write, a
// Lambda timeout) is run again by the workflow runtime, since steps run at
// least once; the call inside it then returns the response the idempotency
// store recorded instead of charging, booking or sending a second time.
//
// When the downstream API takes an idempotency key of its own (Stripe's
// Idempotency-Key, SQS FIFO deduplication IDs, a conditional write), pass it
// stepkey.FromContext and skip this package: the downstream deduplicates. Use
// it when the downstream has no such key, or when the step needs the first
// call's response back (an ID the downstream generated), which the
// downstream's deduplication would not return. The store is DynamoDB, Redis or
// Valkey, shared with the Powertools-compatible idempotency package; it holds
// the call's response, never the workflow's own state, which stays in the
// run's log.
package workflowidem

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/stepkey"
)

// Payload is what the idempotency manager sees for a call: the step's key and
// the call's input. A manager for Do keys on "stepKey" (Options.EventKeyJMESPath)
// and may validate "input" (Options.PayloadValidationJMESPath), so a step whose
// recorded input changed under the same key is refused rather than answered
// with another request's response. With an empty EventKeyJMESPath the whole
// payload is the key, which also works.
type Payload[I any] struct {
	StepKey string `json:"stepKey"`
	Input   I      `json:"input"`
}

// Do runs fn(ctx, in) at most once for the step ctx belongs to while m's
// record is valid, and returns its result, replayed from m's store on every
// later attempt of the step. Call it inside a step function, with the step's
// context:
//
//	workflow.Step(ctx, "charge", func(sctx context.Context, c Charge) (Receipt, error) {
//		return workflowidem.Do(sctx, charges, c, psp.Charge)
//	}, c)
//
// Outside a step it returns an error matching stepkey's. An error from fn is
// not recorded (the next attempt calls fn again); an attempt that finds
// another attempt of the same step in flight gets an error matching
// idempotency.ErrAlreadyInProgress, which the step's retry policy retries; a
// record whose input does not match fails the step for good (workflow.Fatal
// around idempotency.ErrValidation).
func Do[I, O any](ctx context.Context, m *idempotency.Manager, in I, fn func(context.Context, I) (O, error)) (O, error) {
	key, err := stepkey.FromContext(ctx)
	if err != nil {
		var zero O
		return zero, workflow.Fatal(fmt.Errorf("workflowidem: %w", err))
	}
	return DoKeyed(ctx, m, key, in, fn)
}

// DoKeyed is Do with the step's key given: for steps of other engines, such
// as Lambda durable functions (durable.IdempotencyKey, which the durable
// module's durableidem package passes here), so both kinds of step share one
// manager and one store without their keys colliding. key must be the same in
// every attempt of the step and differ between steps.
func DoKeyed[I, O any](ctx context.Context, m *idempotency.Manager, key string, in I, fn func(context.Context, I) (O, error)) (O, error) {
	var zero O
	if m == nil {
		return zero, workflow.Fatal(errors.New("workflowidem: nil idempotency manager"))
	}
	if key == "" {
		return zero, workflow.Fatal(errors.New("workflowidem: empty step key"))
	}
	out, err := idempotency.Execute(ctx, m, Payload[I]{StepKey: key, Input: in}, func(ctx context.Context) (O, error) {
		return fn(ctx, in)
	})
	if errors.Is(err, idempotency.ErrValidation) {
		return zero, workflow.Fatal(err)
	}
	return out, err
}
