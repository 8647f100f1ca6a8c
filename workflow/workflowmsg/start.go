package workflowmsg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// StartConfig configures [StartHandler].
type StartConfig[I any] struct {
	// Key names each message's run; nil is KeyMessageID.
	Key Key
	// Prefix starts every run ID ([RunID]), so handlers keyed alike start
	// distinct runs: "order-", "invoice-". At most 40 bytes.
	Prefix string
	// Input takes the workflow's input out of a message; nil decodes the
	// message (the SNS envelope's Message, else the body) as JSON into I. An
	// error makes the message invalid.
	Input func(m middleware.Message) (I, error)
	// Options apply to every start, for example workflow.WithAttributes.
	Options []workflow.StartOption
}

// StartHandler returns a handler that starts a run of w for each message,
// under the run ID its key gives, and acknowledges the message once the run is
// created. A message delivered again (a redelivery after a failure, an SQS
// duplicate) finds its run started with the same input and is acknowledged:
// it starts no second run. A message whose run ID is taken by a run of another
// workflow or started from other input, one without a key, and one whose input
// does not decode are fatal *[MessageError]s; a World failure is returned as
// it is, so the message is retried.
func StartHandler[I, O any](c *workflow.Client, w workflow.Workflow[I, O], cfg StartConfig[I]) (middleware.Handler, error) {
	if c == nil {
		return nil, &worlds.ArgumentError{Field: "client", Value: nil, Reason: "required"}
	}
	if err := validatePrefix("StartConfig.Prefix", cfg.Prefix); err != nil {
		return nil, err
	}
	key := cfg.Key
	if key == nil {
		key = KeyMessageID()
	}
	input := cfg.Input
	if input == nil {
		input = decodeJSON[I]
	}
	return func(ctx context.Context, m middleware.Message) error {
		if m == nil {
			return merrors.Fatal(&MessageError{Field: "message", Reason: "nil message"})
		}
		runID, err := runFor(key, cfg.Prefix, m)
		if err != nil {
			return merrors.Fatal(err)
		}
		in, err := input(m)
		if err != nil {
			return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "input", Reason: "does not decode", Err: err})
		}
		opts := append([]workflow.StartOption{workflow.WithRunID(runID)}, cfg.Options...)
		_, err = workflow.Start(ctx, c, w, in, opts...)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, worlds.ErrRunExists):
			return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "run", Reason: "run " + runID + " exists, started otherwise", Err: err})
		case errors.Is(err, worlds.ErrInvalidArgument) || errors.Is(err, workflow.ErrSerialization):
			return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "input", Reason: "refused", Err: err})
		}
		return fmt.Errorf("workflowmsg: start run %s: %w", runID, err)
	}, nil
}

// decodeJSON decodes the message into a T.
func decodeJSON[T any](m middleware.Message) (T, error) {
	var v T
	err := m.DecodeMessage(&v)
	return v, err
}

// rawMessage is the message as a JSON payload.
func rawMessage(m middleware.Message) (any, error) {
	raw := json.RawMessage(m.Message())
	if !json.Valid(raw) {
		return nil, errors.New("the message is not JSON")
	}
	return raw, nil
}
