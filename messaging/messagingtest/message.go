package messagingtest

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/cairn-go/cairn/messaging/middleware"
)

// Message is a middleware.Delivery built in memory for handler tests. A
// BodyText that is an SNS notification envelope is unwrapped like the
// consumer does. Backoff records its request in BackoffSet and BackoffFor.
type Message struct {
	MessageID  string
	Receipt    string
	BodyText   string
	Attrs      map[string]string
	System     map[string]string
	Queue      string
	BackoffSet bool
	BackoffFor time.Duration
}

var _ middleware.Delivery = (*Message)(nil)

// NewMessage returns a Message with the body and string attributes.
func NewMessage(body string, attrs map[string]string) *Message {
	return &Message{MessageID: "test-message", Receipt: "test-receipt", BodyText: body, Attrs: attrs,
		System: map[string]string{}, Queue: "test"}
}

func (m *Message) envelope() (middleware.SNSEnvelope, bool) {
	return middleware.ParseSNSEnvelope([]byte(m.BodyText))
}

// ID implements middleware.Delivery.
func (m *Message) ID() string { return m.MessageID }

// Body implements middleware.Message.
func (m *Message) Body() []byte { return []byte(m.BodyText) }

// Decode implements middleware.Message.
func (m *Message) Decode(out any) error { return json.Unmarshal(m.Body(), out) }

// DecodeMessage implements middleware.Message.
func (m *Message) DecodeMessage(out any) error { return json.Unmarshal([]byte(m.Message()), out) }

// Message implements middleware.Message.
func (m *Message) Message() string {
	if env, ok := m.envelope(); ok {
		return env.Message
	}
	return m.BodyText
}

// Identifier implements middleware.Message.
func (m *Message) Identifier() string { return m.Receipt }

// Attribute implements middleware.Message.
func (m *Message) Attribute(name string) string {
	if v, ok := m.Attrs[name]; ok {
		return v
	}
	if env, ok := m.envelope(); ok {
		return env.MessageAttributes[name].Value
	}
	return ""
}

// Attributes implements middleware.Message.
func (m *Message) Attributes() map[string]string {
	out := make(map[string]string, len(m.Attrs))
	if env, ok := m.envelope(); ok {
		for k, v := range env.MessageAttributes {
			out[k] = v.Value
		}
	}
	for k, v := range m.Attrs {
		out[k] = v
	}
	return out
}

// UserMessageAttribute returns Attrs[name], the message's own SQS attributes.
func (m *Message) UserMessageAttribute(name string) string { return m.Attrs[name] }

// UserMessageAttributes returns a copy of Attrs.
func (m *Message) UserMessageAttributes() map[string]string {
	out := make(map[string]string, len(m.Attrs))
	for k, v := range m.Attrs {
		out[k] = v
	}
	return out
}

// Metadata implements middleware.Message.
func (m *Message) Metadata() map[string]string { return m.Attributes() }

// SystemAttributeByKey implements middleware.Message.
func (m *Message) SystemAttributeByKey(name string) string { return m.System[name] }

// SystemAttributes implements middleware.Message.
func (m *Message) SystemAttributes() map[string]string {
	out := make(map[string]string, len(m.System))
	for k, v := range m.System {
		out[k] = v
	}
	return out
}

// TimeStamp implements middleware.Message.
func (m *Message) TimeStamp() time.Time {
	if env, ok := m.envelope(); ok && !env.Timestamp.IsZero() {
		return env.Timestamp
	}
	ms, err := strconv.ParseInt(m.System["SentTimestamp"], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// GroupID implements middleware.Delivery.
func (m *Message) GroupID() string { return m.System["MessageGroupId"] }

// ReceiveCount implements middleware.Delivery.
func (m *Message) ReceiveCount() int {
	n, err := strconv.Atoi(m.System["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// QueueName implements middleware.Delivery.
func (m *Message) QueueName() string { return m.Queue }

// Backoff implements middleware.Delivery.
func (m *Message) Backoff(d time.Duration) { m.BackoffSet, m.BackoffFor = true, d }
