package consumer

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// delivery is one received message; it implements middleware.Message.
type delivery struct {
	msg        types.Message
	b          *batch
	queue      string
	groupKey   string
	done       bool // guarded by consumer.mu
	backoff    time.Duration
	backoffSet bool
}

func (d *delivery) ID() string { return deref(d.msg.MessageId) }

func (d *delivery) Body() []byte { return []byte(deref(d.msg.Body)) }

func (d *delivery) Attribute(name string) (string, bool) {
	v, ok := d.msg.MessageAttributes[name]
	if !ok || v.StringValue == nil {
		return "", false
	}
	return *v.StringValue, true
}

func (d *delivery) Attributes() map[string]string {
	out := make(map[string]string, len(d.msg.MessageAttributes))
	for k, v := range d.msg.MessageAttributes {
		if v.StringValue != nil {
			out[k] = *v.StringValue
		}
	}
	return out
}

func (d *delivery) SystemAttribute(name string) string { return d.msg.Attributes[name] }

func (d *delivery) GroupID() string {
	return d.msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
}

func (d *delivery) ReceiveCount() int {
	n, err := strconv.Atoi(d.msg.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func (d *delivery) QueueName() string { return d.queue }

func (d *delivery) Backoff(delay time.Duration) {
	d.backoff, d.backoffSet = max(delay, 0), true
}

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
	pending    int
	seq        uint64
	prev, next *batch
}
