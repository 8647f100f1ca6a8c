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

// SignalConfig configures [SignalHandler].
type SignalConfig struct {
	// Key names the run each message goes to; nil is KeyGroupID, so the
	// messages of a FIFO group reach one run in order.
	Key Key
	// Prefix is the RunID prefix of the runs, as the handler that started
	// them used it.
	Prefix string
	// Name is the signal's name: the run reads it with
	// workflow.NewSignalChannel(ctx, Name). Required.
	Name string
	// Payload takes the signal's payload out of a message; nil sends the
	// message (the SNS envelope's Message, else the body) as it is, which
	// must be JSON. An error makes the message invalid.
	Payload func(m middleware.Message) (any, error)
}

// SignalHandler returns a handler that sends each message to its run as a
// signal named cfg.Name, under the message's MessageId as the signal's ID
// (worlds.WithSignalID): a message delivered again is not signalled twice.
// A run that does not exist yet is a retryable error (the message comes back
// after its backoff, by when a start may have created the run); an ended run,
// a message without a key and a payload that is not JSON are fatal
// *[MessageError]s.
func SignalHandler(c *workflow.Client, cfg SignalConfig) (middleware.Handler, error) {
	send, err := newSender(c, "SignalConfig", cfg.Key, cfg.Prefix, cfg.Name, cfg.Payload)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, m middleware.Message) error {
		runID, payload, opts, err := send.prepare(m)
		if err != nil {
			return err
		}
		err = worlds.SendSignal(ctx, c.World(), runID, cfg.Name, payload, opts...)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, worlds.ErrRunNotFound):
			return fmt.Errorf("workflowmsg: signal %q: run %s does not exist yet: %w", cfg.Name, runID, err)
		}
		return send.classify(m, runID, err)
	}, nil
}

// SignalWithStartConfig configures [SignalWithStartHandler].
type SignalWithStartConfig[I any] struct {
	// Key, Prefix, Name and Payload are as in [SignalConfig].
	Key     Key
	Prefix  string
	Name    string
	Payload func(m middleware.Message) (any, error)
	// Input takes the input of a run the message starts out of the message;
	// nil decodes the message as JSON into I.
	Input func(m middleware.Message) (I, error)
	// Attributes are stored on every run the handler starts.
	Attributes map[string]string
}

// SignalWithStartHandler returns a handler that sends each message to its
// run as a signal, starting the run (with the message's input and the signal
// in one write) when it does not exist: one long-lived run per key, which
// reads every message of its key with a signal channel. Redeliveries are
// signalled once, as with [SignalHandler]. An ended run, a run ID taken by
// another workflow, a message without a key and an input or payload that do
// not decode are fatal *[MessageError]s.
func SignalWithStartHandler[I, O any](c *workflow.Client, w workflow.Workflow[I, O], cfg SignalWithStartConfig[I]) (middleware.Handler, error) {
	send, err := newSender(c, "SignalWithStartConfig", cfg.Key, cfg.Prefix, cfg.Name, cfg.Payload)
	if err != nil {
		return nil, err
	}
	if err := worlds.ValidateAttributes(cfg.Attributes); err != nil {
		return nil, err
	}
	input := cfg.Input
	if input == nil {
		input = decodeJSON[I]
	}
	wf := workflow.Use(w).Workflows()[0]
	return func(ctx context.Context, m middleware.Message) error {
		runID, payload, opts, err := send.prepare(m)
		if err != nil {
			return err
		}
		in, err := input(m)
		if err != nil {
			return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "input", Reason: "does not decode", Err: err})
		}
		raw, err := json.Marshal(in)
		if err != nil {
			return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "input", Reason: "does not encode", Err: err})
		}
		_, err = worlds.SignalWithStart(ctx, c.World(), runID, wf, raw, cfg.Attributes, cfg.Name, payload, opts...)
		if err == nil {
			return nil
		}
		return send.classify(m, runID, err)
	}, nil
}

// sender is what the signal handlers share.
type sender struct {
	key     Key
	prefix  string
	payload func(m middleware.Message) (any, error)
}

func newSender(c *workflow.Client, config string, key Key, prefix, name string, payload func(middleware.Message) (any, error)) (*sender, error) {
	if c == nil {
		return nil, &worlds.ArgumentError{Field: "client", Value: nil, Reason: "required"}
	}
	if name == "" || len(name) > worlds.MaxSignalNameLength {
		return nil, &worlds.ArgumentError{Field: config + ".Name", Value: name, Reason: fmt.Sprintf("a signal name must be 1 to %d bytes", worlds.MaxSignalNameLength)}
	}
	if err := validatePrefix(config+".Prefix", prefix); err != nil {
		return nil, err
	}
	if key == nil {
		key = KeyGroupID()
	}
	if payload == nil {
		payload = rawMessage
	}
	return &sender{key: key, prefix: prefix, payload: payload}, nil
}

// prepare returns m's run ID, its payload as JSON and its signal options.
func (s *sender) prepare(m middleware.Message) (string, json.RawMessage, []worlds.SignalOption, error) {
	if m == nil {
		return "", nil, nil, merrors.Fatal(&MessageError{Field: "message", Reason: "nil message"})
	}
	runID, err := runFor(s.key, s.prefix, m)
	if err != nil {
		return "", nil, nil, merrors.Fatal(err)
	}
	v, err := s.payload(m)
	if err != nil {
		return "", nil, nil, merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "payload", Reason: "does not decode", Err: err})
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", nil, nil, merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "payload", Reason: "does not encode", Err: err})
	}
	var opts []worlds.SignalOption
	if id := idOf(m); id != "" {
		opts = append(opts, worlds.WithSignalID(id))
	}
	return runID, raw, opts, nil
}

// classify turns a refused signal into a fatal error and wraps the rest.
func (s *sender) classify(m middleware.Message, runID string, err error) error {
	switch {
	case errors.Is(err, worlds.ErrRunFinished):
		return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "run", Reason: "run " + runID + " has ended", Err: err})
	case errors.Is(err, worlds.ErrRunExists):
		return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "run", Reason: "run " + runID + " belongs to another workflow", Err: err})
	case errors.Is(err, worlds.ErrInvalidArgument):
		return merrors.Fatal(&MessageError{MessageID: idOf(m), Field: "payload", Reason: "refused", Err: err})
	}
	return fmt.Errorf("workflowmsg: signal run %s: %w", runID, err)
}
