// Package middleware defines the message Handler, the Middleware that wraps
// it, and the built-in Recovery, Logging, Prometheus Metrics and OpenTelemetry
// middleware shared by the consumer and the Lambda adapter.
package middleware

import (
	"context"
	"strconv"
	"time"
)

// Message is one message handed to a Handler. Implementations are provided by
// the consumer (SQS polling) and the lambda adapter (SQS events); tests can
// use messagingtest.NewMessage or a double of their own.
//
// Its method set is exactly loafer-awsx's message interface, so a test double
// written for loafer-awsx implements it unchanged. A body that is an SNS
// notification envelope (a subscription without raw message delivery) is
// unwrapped: Message and DecodeMessage return the published message, and
// Attribute reads the envelope's MessageAttributes as well as the SQS message
// attributes. The messages cairn delivers also implement Delivery, for the
// message ID, group, receive count, queue and Backoff; the functions
// MessageID, GroupID, ReceiveCount, QueueName and Backoff read those from any
// Message.
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
}

// Delivery is a Message together with what cairn knows about its delivery.
// Every Message that cairn's consumer, Lambda adapter and messagingtest hand
// to a Handler implements it; a Handler can assert to it:
//
//	if d, ok := msg.(middleware.Delivery); ok {
//		d.Backoff(time.Minute)
//	}
//
// These methods are kept out of Message so that a Message double needs only
// loafer-awsx's methods. Code that must also accept such doubles, or messages
// wrapped by a middleware, should call the package functions of the same
// names, which fall back to the SQS system attributes.
type Delivery interface {
	Message
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

// SQS system attribute names read by the fallbacks below.
const (
	attrGroupID      = "MessageGroupId"
	attrReceiveCount = "ApproximateReceiveCount"
)

// Each function asks for one method rather than the whole Delivery, so a
// double (or a wrapper) that implements only some of them still answers.

// MessageID returns the SQS MessageId of m, or "" when m is nil or does not
// carry one (SQS has no MessageId system attribute to fall back to).
func MessageID(m Message) string {
	if d, ok := m.(interface{ ID() string }); ok {
		return d.ID()
	}
	return ""
}

// GroupID returns the FIFO MessageGroupId of m: its GroupID method when it
// has one, else its MessageGroupId system attribute. It is "" on standard
// queues and for a nil m.
func GroupID(m Message) string {
	if m == nil {
		return ""
	}
	if d, ok := m.(interface{ GroupID() string }); ok {
		return d.GroupID()
	}
	return m.SystemAttributeByKey(attrGroupID)
}

// ReceiveCount returns how many times m has been received: its ReceiveCount
// method when it has one, else its ApproximateReceiveCount system attribute.
// A message being handled has been received at least once, so a missing or
// invalid attribute counts as 1; a nil m counts as 0.
func ReceiveCount(m Message) int {
	if m == nil {
		return 0
	}
	if d, ok := m.(interface{ ReceiveCount() int }); ok {
		return d.ReceiveCount()
	}
	n, err := strconv.Atoi(m.SystemAttributeByKey(attrReceiveCount))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// QueueName returns the name of the queue m came from, or "" when m is nil
// or does not say (SQS system attributes do not name the queue).
func QueueName(m Message) string {
	if d, ok := m.(interface{ QueueName() string }); ok {
		return d.QueueName()
	}
	return ""
}

// Backoff asks for m to be retried after d instead of being deleted, as
// Delivery.Backoff does, and reports whether m accepted the request. It
// accepts any message with a Backoff(time.Duration) method, including one
// written for loafer-awsx's consumer.Message. It reports false for a nil m
// or one that cannot back off; the handler should then return an error
// (errors.Backoff(err, d) carries the delay) to have the message retried.
func Backoff(m Message, d time.Duration) bool {
	b, ok := m.(interface{ Backoff(time.Duration) })
	if ok {
		b.Backoff(d)
	}
	return ok
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
