// Package stepkey derives the idempotency key of a workflow step from its run ID
// and step ID, the two values that identify one logical step durably: they are
// recorded in the run's log, identical in every attempt and every process, and
// never derived from request IDs, clocks, random values or map order.
//
// Use it to make a step's external side effect idempotent with the idempotency
// package:
//
//	func charge(ctx context.Context, order Order) (Receipt, error) {
//	    p, err := stepkey.Payload(ctx)
//	    if err != nil { return Receipt{}, err }
//	    return idempotency.Execute(ctx, payments, p, func(ctx context.Context) (Receipt, error) {
//	        return psp.Charge(ctx, order)
//	    })
//	}
//
// Failure window closed: the process dies (or the World write fails) after the
// side effect and before the step's completion is recorded. The runtime runs the
// step again as a new attempt; the key is the same, so the idempotency store
// replays the stored result instead of charging twice.
//
// Failure windows not closed: a death after the side effect and before the
// idempotency record is marked completed (the record stays in progress until its
// lease expires, then the effect can run again unless the downstream system
// deduplicates too); an effect whose own request was lost in flight; and records
// expiring (idempotency ExpiresAfter) before a retry arrives. Exactly-once needs the
// downstream system to accept the key itself, for example as a payment provider's
// idempotency key: pass [Key] there as well.
//
// The idempotency table remains application-level duplicate protection; the
// runtime never uses it as its checkpoint store.
package stepkey

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/cairn-go/cairn/workflow"
)

// ErrNotInStep: the context carries no step identity (not a step attempt's context).
var ErrNotInStep = errors.New("stepkey: context is not a workflow step's")

// Version prefixes every key, so a future derivation can coexist with stored records.
const Version = "cairn-step-v1"

// Key derives the key for a step. The parts are length-prefixed, so no two
// (runID, stepID) pairs give the same key whatever characters they contain.
func Key(runID, stepID string) (string, error) {
	if runID == "" {
		return "", fmt.Errorf("stepkey: runID is required")
	}
	if stepID == "" {
		return "", fmt.Errorf("stepkey: stepID is required")
	}
	return Version + ":" + strconv.Itoa(len(runID)) + ":" + runID + ":" + strconv.Itoa(len(stepID)) + ":" + stepID, nil
}

// FromContext derives the key of the step whose attempt ctx belongs to. The
// attempt number is deliberately not part of it.
func FromContext(ctx context.Context) (string, error) {
	info, ok := workflow.InfoFrom(ctx)
	if !ok || info.StepID == "" {
		return "", ErrNotInStep
	}
	return Key(info.RunID, info.StepID)
}

// StepPayload is the payload [Payload] returns: pass it to idempotency.Execute with
// an empty EventKeyJMESPath (the whole payload is the key), or select "stepKey".
type StepPayload struct {
	StepKey string `json:"stepKey"`
}

// Payload returns the idempotency payload for the step of ctx.
func Payload(ctx context.Context) (StepPayload, error) {
	k, err := FromContext(ctx)
	if err != nil {
		return StepPayload{}, err
	}
	return StepPayload{StepKey: k}, nil
}
