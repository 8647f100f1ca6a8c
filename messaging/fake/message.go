package fake

import (
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/cairn-go/cairn/messaging/consumer"
)

var _ consumer.Message = (*Message)(nil)

// Message is a consumer.Message (and so a middleware.Message) whose accessors
// return its exported fields, for handler and middleware tests. Dispatch and
// Backoff are recorded; read them with DispatchCount, BackoffDelays and
// BackedOff.
//
// The zero Message is usable: accessors return zero values and the map
// accessors empty, non-nil maps. Use it through a pointer.
type Message struct {
	// TimeStampValue is returned by TimeStamp.
	TimeStampValue time.Time
	// MetadataValues is returned (copied) by Metadata.
	MetadataValues map[string]string
	// AttributeValues backs Attribute and Attributes.
	AttributeValues map[string]string
	// UserMessageAttributeValues backs UserMessageAttribute and
	// UserMessageAttributes: the native SQS message attributes.
	UserMessageAttributeValues map[string]string
	// SystemAttributeValues backs SystemAttributeByKey and SystemAttributes.
	SystemAttributeValues map[string]string
	// DecodeFunc, when set, replaces Decode's JSON decoding of BodyData.
	DecodeFunc func(out any) error
	// DecodeMessageFunc, when set, replaces DecodeMessage's JSON decoding of
	// MessageValue.
	DecodeMessageFunc func(out any) error
	// MessageValue is returned by Message: the SNS envelope's inner message.
	MessageValue string
	// IdentifierValue is returned by Identifier: the receipt handle.
	IdentifierValue string
	// BodyData is returned by Body.
	BodyData []byte
	// BackedOffValue is what BackedOff reports before any Backoff call.
	BackedOffValue bool

	mu         sync.Mutex
	dispatches int
	backoffs   []time.Duration
}

// Body returns BodyData.
func (m *Message) Body() []byte { return m.BodyData }

// Decode calls DecodeFunc when set, and otherwise decodes BodyData as JSON.
func (m *Message) Decode(out any) error {
	if m.DecodeFunc != nil {
		return m.DecodeFunc(out)
	}
	return json.Unmarshal(m.BodyData, out)
}

// DecodeMessage calls DecodeMessageFunc when set, and otherwise decodes
// MessageValue as JSON.
func (m *Message) DecodeMessage(out any) error {
	if m.DecodeMessageFunc != nil {
		return m.DecodeMessageFunc(out)
	}
	return json.Unmarshal([]byte(m.MessageValue), out)
}

// Attribute returns AttributeValues[key], "" when absent.
func (m *Message) Attribute(key string) string { return m.AttributeValues[key] }

// Attributes returns a copy of AttributeValues, never nil.
func (m *Message) Attributes() map[string]string { return cloneMap(m.AttributeValues) }

// UserMessageAttribute returns UserMessageAttributeValues[name], "" when absent.
func (m *Message) UserMessageAttribute(name string) string {
	return m.UserMessageAttributeValues[name]
}

// UserMessageAttributes returns a copy of UserMessageAttributeValues, never nil.
func (m *Message) UserMessageAttributes() map[string]string {
	return cloneMap(m.UserMessageAttributeValues)
}

// SystemAttributeByKey returns SystemAttributeValues[key], "" when absent.
func (m *Message) SystemAttributeByKey(key string) string { return m.SystemAttributeValues[key] }

// SystemAttributes returns a copy of SystemAttributeValues, never nil.
func (m *Message) SystemAttributes() map[string]string { return cloneMap(m.SystemAttributeValues) }

// Metadata returns a copy of MetadataValues, never nil.
func (m *Message) Metadata() map[string]string { return cloneMap(m.MetadataValues) }

// Identifier returns IdentifierValue.
func (m *Message) Identifier() string { return m.IdentifierValue }

// Message returns MessageValue.
func (m *Message) Message() string { return m.MessageValue }

// TimeStamp returns TimeStampValue.
func (m *Message) TimeStamp() time.Time { return m.TimeStampValue }

// Dispatch counts a call; see DispatchCount.
func (m *Message) Dispatch() {
	m.mu.Lock()
	m.dispatches++
	m.mu.Unlock()
}

// DispatchCount returns how many times Dispatch was called.
func (m *Message) DispatchCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dispatches
}

// Backoff records delay and marks the message backed off.
func (m *Message) Backoff(delay time.Duration) {
	m.mu.Lock()
	m.backoffs = append(m.backoffs, delay)
	m.mu.Unlock()
}

// BackoffDelays returns the delays given to Backoff, in call order.
func (m *Message) BackoffDelays() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(make([]time.Duration, 0, len(m.backoffs)), m.backoffs...)
}

// BackedOff reports whether Backoff was called, or BackedOffValue before that.
func (m *Message) BackedOff() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.BackedOffValue || len(m.backoffs) > 0
}

func cloneMap(src map[string]string) map[string]string {
	if src == nil {
		return map[string]string{}
	}
	return maps.Clone(src)
}
