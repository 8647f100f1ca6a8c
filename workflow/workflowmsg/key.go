// Package workflowmsg connects messaging and workflows: a message handler that
// starts one run per message, exactly once however often the message is
// delivered; handlers that route messages into running runs as signals, one
// run per key (a FIFO message group keeps its order); and a step helper that
// publishes a run's outcome to SNS with a deduplication ID taken from the run
// and step, so a retried step does not publish twice to a FIFO topic.
//
// The handlers are [middleware.Handler]s: register them on a messaging router
// for a long-running consumer, or with messaging/lambda for an SQS-triggered
// Lambda function. They classify their errors as the messaging packages do: a
// message that can never start or reach a run (no key, an input that does not
// decode, a run of another workflow under its ID) is fatal and goes to the
// dead-letter path at once, matching [ErrInvalidMessage]; a World that fails
// returns a plain error, and the message is retried.
package workflowmsg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairn-go/cairn/internal/jmespath"
	"github.com/cairn-go/cairn/internal/jsvalue"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/worlds"
)

// ErrInvalidMessage matches every error of a message that retrying cannot
// fix. It is wrapped in the messaging packages' fatal error, so the message
// goes to the dead-letter path.
var ErrInvalidMessage = errors.New("workflowmsg: invalid message")

// MessageError says why a message cannot start or reach a run. It matches
// [ErrInvalidMessage].
type MessageError struct {
	// MessageID is the message's SQS MessageId, when known.
	MessageID string
	// Field is what is wrong: "key", "input", "payload" or "run".
	Field  string
	Reason string
	Err    error
}

func (e *MessageError) Error() string {
	s := "workflowmsg: message"
	if e.MessageID != "" {
		s += " " + e.MessageID
	}
	s += ": " + e.Field + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrInvalidMessage and the cause.
func (e *MessageError) Unwrap() []error { return []error{ErrInvalidMessage, e.Err} }

// Key takes the key that names a message's run out of a message. An error it
// returns makes the message invalid.
type Key func(m middleware.Message) (string, error)

// idOf returns the message's SQS MessageId, from cairn's message types.
func idOf(m middleware.Message) string {
	if d, ok := m.(interface{ ID() string }); ok {
		return d.ID()
	}
	return ""
}

// KeyMessageID keys a message by its SQS MessageId: one run per message, and
// a redelivery of the same message finds its run. A message sent twice by its
// producer has two IDs; key by a business field ([KeyBodyField]) or the FIFO
// deduplication ID ([KeyDeduplicationID]) when that must start one run.
func KeyMessageID() Key {
	return func(m middleware.Message) (string, error) {
		if id := idOf(m); id != "" {
			return id, nil
		}
		return "", errors.New("the message has no MessageId")
	}
}

// KeyDeduplicationID keys a message by its FIFO MessageDeduplicationId, which
// SQS keeps for five minutes and cairn keeps for the life of the run.
func KeyDeduplicationID() Key { return keyAttribute("MessageDeduplicationId") }

// KeyGroupID keys a message by its FIFO MessageGroupId: every message of a
// group reaches one run, in the group's order.
func KeyGroupID() Key { return keyAttribute("MessageGroupId") }

func keyAttribute(name string) Key {
	return func(m middleware.Message) (string, error) {
		if v := m.SystemAttributeByKey(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("the message has no %s (not from a FIFO queue?)", name)
	}
}

// KeyBodyField keys a message by a field of its JSON message (the SNS
// envelope's Message for a notification, else the body), selected with a
// JMESPath expression such as "orderId" or "detail.order.id". A string is
// used as it is, a number or boolean in its JSON form; null, a missing field,
// an object or an array make the message invalid. A bad expression is
// reported here.
func KeyBodyField(expr string) (Key, error) {
	e, err := jmespath.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("workflowmsg: KeyBodyField(%q): %w", expr, err)
	}
	return func(m middleware.Message) (string, error) {
		doc, err := jsvalue.Parse([]byte(m.Message()))
		if err != nil {
			return "", fmt.Errorf("the message is not JSON: %w", err)
		}
		v, err := e.Search(doc)
		if err != nil {
			return "", fmt.Errorf("%s: %w", expr, err)
		}
		switch v.Kind {
		case jsvalue.String:
			if v.S == "" {
				return "", fmt.Errorf("%s is an empty string", expr)
			}
			return v.S, nil
		case jsvalue.Number, jsvalue.Bool:
			out, _ := jsvalue.Stringify(v)
			return string(out), nil
		}
		return "", fmt.Errorf("%s selects no string, number or boolean", expr)
	}, nil
}

// maxPrefix bounds RunID prefixes, leaving room for a hashed key.
const maxPrefix = 40

// hashMark starts the hashed form of a key in a run ID.
const hashMark = "sha256-"

// RunID is the run ID of key under prefix: prefix+key when that is a valid run
// ID (see worlds.ValidateRunID) and key does not start with "sha256-", else
// prefix + "sha256-" + the first 40 hex digits of the key's SHA-256. Readable
// keys (order IDs) give readable run IDs; any other key still gives one run ID
// per key. Call it to find the run a message started.
func RunID(prefix, key string) string {
	if !strings.HasPrefix(key, hashMark) && worlds.ValidateRunID(prefix+key) == nil {
		return prefix + key
	}
	sum := sha256.Sum256([]byte(key))
	return prefix + hashMark + hex.EncodeToString(sum[:20])
}

// validatePrefix checks a RunID prefix.
func validatePrefix(field, prefix string) error {
	if len(prefix) > maxPrefix {
		return &worlds.ArgumentError{Field: field, Value: strconv.Quote(prefix), Reason: fmt.Sprintf("longer than %d bytes", maxPrefix)}
	}
	if prefix == "" {
		return nil
	}
	if err := worlds.ValidateRunID(prefix); err != nil {
		return &worlds.ArgumentError{Field: field, Value: strconv.Quote(prefix), Reason: "use ASCII letters, digits, '-', '_', '.' and ':'"}
	}
	return nil
}

// runFor returns the run ID of message m.
func runFor(key Key, prefix string, m middleware.Message) (string, error) {
	k, err := key(m)
	if err != nil {
		return "", &MessageError{MessageID: idOf(m), Field: "key", Reason: "no run key", Err: err}
	}
	return RunID(prefix, k), nil
}
