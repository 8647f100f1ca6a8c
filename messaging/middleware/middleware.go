// Package middleware defines the message Handler, the Middleware that wraps
// it, and the built-in Recovery, Logging, Prometheus Metrics and OpenTelemetry
// middleware shared by the consumer and the Lambda adapter.
package middleware

import (
	"context"
	"time"
)

// Message is one message handed to a Handler. Implementations are provided by
// the consumer (SQS polling) and the lambda adapter (SQS events); tests can
// use messagingtest.NewMessage.
//
// A Message is valid only until its Handler returns; copy what you need.
type Message interface {
	// ID is the SQS MessageId.
	ID() string
	// Body is the raw message body.
	Body() []byte
	// Attribute returns a string message attribute and whether it is set.
	Attribute(name string) (string, bool)
	// Attributes returns all string message attributes in a fresh map.
	Attributes() map[string]string
	// SystemAttribute returns an SQS system attribute such as
	// "MessageGroupId" or "ApproximateReceiveCount".
	SystemAttribute(name string) string
	// GroupID is the FIFO MessageGroupId, empty on standard queues.
	GroupID() string
	// ReceiveCount is ApproximateReceiveCount (1 on first delivery).
	ReceiveCount() int
	// QueueName is the name of the queue the message came from.
	QueueName() string
	// Backoff asks for the message to be retried after d instead of being
	// deleted, whatever the handler returns. The last call wins.
	Backoff(d time.Duration)
}

// Handler processes one message. A nil error deletes the message; any other
// error is classified by the errors package (retry, fatal, backoff).
type Handler func(ctx context.Context, msg Message) error

// Middleware wraps a Handler.
type Middleware func(Handler) Handler

// Chain composes mws into one Middleware; the first is outermost. Nil entries
// are skipped.
func Chain(mws ...Middleware) Middleware {
	return func(h Handler) Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i] != nil {
				h = mws[i](h)
			}
		}
		return h
	}
}
