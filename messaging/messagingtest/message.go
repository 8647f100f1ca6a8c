package messagingtest

import (
	"strconv"
	"time"

	"github.com/cairn-go/cairn/messaging/middleware"
)

// Message is a middleware.Message built in memory for handler tests.
type Message struct {
	MessageID  string
	BodyText   string
	Attrs      map[string]string
	System     map[string]string
	Queue      string
	BackoffSet bool
	BackoffFor time.Duration
}

var _ middleware.Message = (*Message)(nil)

// NewMessage returns a Message with the body and string attributes.
func NewMessage(body string, attrs map[string]string) *Message {
	return &Message{MessageID: "test-message", BodyText: body, Attrs: attrs, System: map[string]string{}, Queue: "test"}
}

// ID implements middleware.Message.
func (m *Message) ID() string { return m.MessageID }

// Body implements middleware.Message.
func (m *Message) Body() []byte { return []byte(m.BodyText) }

// Attribute implements middleware.Message.
func (m *Message) Attribute(name string) (string, bool) { v, ok := m.Attrs[name]; return v, ok }

// Attributes implements middleware.Message.
func (m *Message) Attributes() map[string]string {
	out := make(map[string]string, len(m.Attrs))
	for k, v := range m.Attrs {
		out[k] = v
	}
	return out
}

// SystemAttribute implements middleware.Message.
func (m *Message) SystemAttribute(name string) string { return m.System[name] }

// GroupID implements middleware.Message.
func (m *Message) GroupID() string { return m.System["MessageGroupId"] }

// ReceiveCount implements middleware.Message.
func (m *Message) ReceiveCount() int {
	n, err := strconv.Atoi(m.System["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// QueueName implements middleware.Message.
func (m *Message) QueueName() string { return m.Queue }

// Backoff implements middleware.Message.
func (m *Message) Backoff(d time.Duration) { m.BackoffSet, m.BackoffFor = true, d }
