package workflowmsg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/stepkey"
	"github.com/cairn-go/cairn/worlds"
)

// Publisher publishes one SNS message; *producer.Producer is one.
type Publisher interface {
	Publish(ctx context.Context, in *producer.PublishInput) (string, error)
}

// Message is what [Publish] sends.
type Message struct {
	// TopicARN is the topic; required.
	TopicARN string
	// Body is encoded as JSON into the message.
	Body any
	// Attributes are the message's string attributes.
	Attributes map[string]string
	// GroupID is the FIFO MessageGroupId; on a FIFO topic (an ARN ending in
	// ".fifo") it defaults to the run ID, so a run's messages stay in order.
	GroupID string
}

// Publish publishes msg from a step named name of the calling workflow and
// returns the SNS MessageId. On a FIFO topic the message's deduplication ID
// is derived from the run and the step (stepkey, without the attempt), so a
// step retried after a crash, or after the publish answered with an error that
// hid its success, publishes a message the topic drops as a duplicate within
// its five-minute window. A standard topic has no deduplication: subscribers
// then see a retried publish twice and must be idempotent.
//
// Publishing a run's outcome this way, as its last step, is exactly once on a
// FIFO topic; an Observer that publishes when a run ends would lose the
// message if its process died after the end was written.
func Publish(ctx workflow.Context, p Publisher, name string, msg Message, opts ...workflow.StepOption) (string, error) {
	if p == nil {
		return "", &worlds.ArgumentError{Field: "publisher", Value: nil, Reason: "required"}
	}
	if msg.TopicARN == "" {
		return "", &worlds.ArgumentError{Field: "Message.TopicARN", Value: `""`, Reason: "required"}
	}
	body, err := json.Marshal(msg.Body)
	if err != nil {
		return "", fmt.Errorf("workflowmsg: publish %q: encode the body: %w", name, err)
	}
	return workflow.Step(ctx, name, func(sctx context.Context, in publishStep) (string, error) {
		pin := &producer.PublishInput{TopicARN: in.TopicARN, Message: in.Body, Attributes: in.Attributes, GroupID: in.GroupID}
		if strings.HasSuffix(in.TopicARN, ".fifo") {
			key, err := stepkey.FromContext(sctx)
			if err != nil {
				return "", workflow.Fatal(err)
			}
			pin.DeduplicationID = DeduplicationID(key)
			if pin.GroupID == "" {
				info, _ := workflow.InfoFrom(sctx)
				pin.GroupID = info.RunID
			}
		}
		return p.Publish(sctx, pin)
	}, publishStep{TopicARN: msg.TopicARN, Body: string(body), Attributes: msg.Attributes, GroupID: msg.GroupID}, opts...)
}

// publishStep is the recorded input of a Publish step.
type publishStep struct {
	TopicARN   string            `json:"topicArn"`
	Body       string            `json:"body"`
	Attributes map[string]string `json:"attributes,omitempty"`
	GroupID    string            `json:"groupId,omitempty"`
}

// DeduplicationID is the FIFO MessageDeduplicationId [Publish] gives the
// message of the step with key stepKey (see stepkey.Key): 64 hex digits of its
// SHA-256, within SNS's 128-character limit whatever the run and step IDs.
func DeduplicationID(stepKey string) string {
	sum := sha256.Sum256([]byte(stepKey))
	return hex.EncodeToString(sum[:])
}
