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
// The first eleven methods are loafer-awsx's message interface. A body that
// is an SNS notification envelope (a subscription without raw message
// delivery) is unwrapped: Message and DecodeMessage return the published
// message, and Attribute reads the envelope's MessageAttributes as well as
// the SQS message attributes. The last five methods are cairn's additions.
//
// A Message is valid only until its Handler returns; copy what you need.
type Message interface {
	// Decode unmarshals the raw body into out using JSON.
	Decode(out any) error
	// DecodeMessage unmarshals the published message into out using JSON:
	// the envelope's Message field for an SNS notification, else the body.
	DecodeMessage(out any) error
	// Attribute returns a string message attribute, or "" when absent. SQS
	// message attributes take precedence over SNS envelope attributes.
	Attribute(key string) string
	// Attributes returns all string attributes (SQS and SNS envelope) in a
	// fresh map.
	Attributes() map[string]string
	// SystemAttributeByKey returns an SQS system attribute such as
	// "MessageGroupId" or "ApproximateReceiveCount", or "" when absent.
	SystemAttributeByKey(key string) string
	// SystemAttributes returns all SQS system attributes in a fresh map.
	SystemAttributes() map[string]string
	// UserMessageAttribute returns the string value of a native SQS message
	// attribute, ignoring SNS envelope attributes; "" when absent.
	UserMessageAttribute(name string) string
	// UserMessageAttributes returns a fresh copy of the native SQS message
	// attributes that carry a string value.
	UserMessageAttributes() map[string]string
	// Metadata returns the message's attributes, like Attributes.
	Metadata() map[string]string
	// Identifier is the receipt handle of this receive.
	Identifier() string
	// Body is the raw message body.
	Body() []byte
	// Message is the published message: the envelope's Message field for
	// an SNS notification, else the body.
	Message() string
	// TimeStamp is the SNS envelope's Timestamp, else the SQS SentTimestamp.
	TimeStamp() time.Time

	// ID is the SQS MessageId.
	ID() string
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
