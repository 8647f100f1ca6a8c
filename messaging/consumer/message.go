package consumer

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/messaging/middleware"
)

// Message is what the consumer hands to handlers: a middleware.Message with
// loafer-awsx's consumer controls, the same method set as loafer-awsx's
// consumer.Message. Handlers receive it as a middleware.Message; assert to
// consumer.Message for Dispatch, Backoff and BackedOff. The consumer's
// messages also implement middleware.Delivery.
type Message interface {
	middleware.Message
	// Dispatch is accepted for loafer-awsx compatibility and does nothing:
	// the consumer stops extending a message's visibility when its handler
	// returns.
	Dispatch()
	// Backoff asks for the message to be retried after delay instead of
	// being deleted, whatever the handler returns. The last call wins.
	Backoff(delay time.Duration)
	// BackedOff reports whether Backoff has been called.
	BackedOff() bool
}

var (
	_ Message             = (*delivery)(nil)
	_ middleware.Delivery = (*delivery)(nil)
)

// delivery is one received message; it implements Message.
type delivery struct {
	msg        *types.Message // into the receive output, alive until the batch is done
	b          *batch
	queue      string
	groupKey   string
	done       bool // guarded by consumer.mu
	backoff    time.Duration
	backoffSet bool
	envOnce    sync.Once
	env        *middleware.SNSEnvelope
	// runner is the worker running the handler, set before it starts, so
	// the heartbeat can cancel the handler when its visibility runs out.
	runner atomic.Pointer[runner]
}

// runner is a worker's handler context. It is replaced, never changed, once
// canceled, so the heartbeat never cancels a later message by mistake.
type runner struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newRunner(parent context.Context) *runner {
	ctx, cancel := context.WithCancelCause(parent)
	return &runner{ctx: ctx, cancel: cancel}
}

func (d *delivery) ID() string { return deref(d.msg.MessageId) }

func (d *delivery) Body() []byte { return []byte(deref(d.msg.Body)) }

func (d *delivery) Decode(out any) error { return json.Unmarshal(d.Body(), out) }

func (d *delivery) DecodeMessage(out any) error { return json.Unmarshal([]byte(d.Message()), out) }

// envelope returns the parsed SNS envelope, or nil for a raw body.
func (d *delivery) envelope() *middleware.SNSEnvelope {
	d.envOnce.Do(func() {
		if env, ok := middleware.ParseSNSEnvelope([]byte(deref(d.msg.Body))); ok {
			d.env = &env
		}
	})
	return d.env
}

func (d *delivery) Message() string {
	if env := d.envelope(); env != nil {
		return env.Message
	}
	return deref(d.msg.Body)
}

// attr reads a string SQS message attribute.
func (d *delivery) attr(name string) (string, bool) {
	v, ok := d.msg.MessageAttributes[name]
	if !ok || v.StringValue == nil {
		return "", false
	}
	return *v.StringValue, true
}

func (d *delivery) Attribute(name string) string {
	if v, ok := d.attr(name); ok {
		return v
	}
	if env := d.envelope(); env != nil {
		return env.MessageAttributes[name].Value
	}
	return ""
}

func (d *delivery) Attributes() map[string]string {
	env := d.envelope()
	n := len(d.msg.MessageAttributes)
	if env != nil {
		n += len(env.MessageAttributes)
	}
	out := make(map[string]string, n)
	if env != nil {
		for k, v := range env.MessageAttributes {
			out[k] = v.Value
		}
	}
	for k, v := range d.msg.MessageAttributes {
		if v.StringValue != nil {
			out[k] = *v.StringValue
		}
	}
	return out
}

func (d *delivery) UserMessageAttribute(name string) string {
	v, _ := d.attr(name)
	return v
}

func (d *delivery) UserMessageAttributes() map[string]string {
	out := make(map[string]string, len(d.msg.MessageAttributes))
	for k, v := range d.msg.MessageAttributes {
		if v.StringValue != nil {
			out[k] = *v.StringValue
		}
	}
	return out
}

func (d *delivery) Metadata() map[string]string { return d.Attributes() }

func (d *delivery) SystemAttributeByKey(name string) string { return d.msg.Attributes[name] }

func (d *delivery) SystemAttributes() map[string]string {
	out := make(map[string]string, len(d.msg.Attributes))
	for k, v := range d.msg.Attributes {
		out[k] = v
	}
	return out
}

func (d *delivery) Identifier() string { return deref(d.msg.ReceiptHandle) }

func (d *delivery) TimeStamp() time.Time {
	if env := d.envelope(); env != nil && !env.Timestamp.IsZero() {
		return env.Timestamp
	}
	ms, err := strconv.ParseInt(d.msg.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func (d *delivery) GroupID() string {
	return d.msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
}

func (d *delivery) ReceiveCount() int { return receiveCount(d.msg) }

func (d *delivery) QueueName() string { return d.queue }

func (d *delivery) Backoff(delay time.Duration) {
	d.backoff, d.backoffSet = max(delay, 0), true
}

func (d *delivery) BackedOff() bool { return d.backoffSet }

func (d *delivery) Dispatch() {}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// batch is the result of one ReceiveMessage call. Its messages share a
// receive time, so the heartbeat extends them together, whether or not a
// worker has picked them up yet.
type batch struct {
	items        []delivery
	receivedAt   time.Time
	visibleUntil time.Time
	// lapse mirrors visibleUntil (unix nanoseconds) for workers, which read
	// it without the consumer lock.
	lapse      atomic.Int64
	extensions int
	// gaveUp is set once the heartbeat can no longer extend the batch and
	// has canceled its running handlers.
	gaveUp     bool
	pending    int
	seq        uint64
	prev, next *batch
}
