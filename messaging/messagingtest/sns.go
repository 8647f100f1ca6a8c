package messagingtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SNS is an in-memory SNS that enforces the publish limits (256 KiB per
// message and per batch, 10 entries per batch, 128-character group and
// deduplication IDs, deduplication IDs only on FIFO topics, and on a FIFO
// topic without content-based deduplication a deduplication ID on every
// message) and fans out to SQS queues, with raw delivery (Subscribe) or in
// the SNS JSON envelope (SubscribeEnvelope). Like SNS it accepts any number
// of message attributes, but drops a message with more than 10 on the way to
// a raw-delivery SQS subscription (see Dropped).
type SNS struct {
	mu           sync.Mutex
	sqs          *SQS
	subs         map[string][]subscription // by topic ARN
	noContentDup map[string]bool           // FIFO topics without content-based deduplication
	calls        map[string]int
	nextID       int
	dropped      int
	// Reject, when set, makes an entry fail with code "Rejected".
	Reject func(body string) bool
}

// NewSNS returns a fake that delivers to sqs (which may be nil).
func NewSNS(sqs *SQS) *SNS {
	return &SNS{sqs: sqs, subs: map[string][]subscription{}, noContentDup: map[string]bool{}, calls: map[string]int{}}
}

// MaxPublishBytes is the SNS message size limit, for one message and for a
// PublishBatch: 256 KiB (SQS allows 1 MiB since 2025; SNS did not change).
const MaxPublishBytes = 256 * 1024

// MaxRawDeliveryAttributes is the most message attributes SNS delivers to a
// raw-delivery SQS subscription; a message with more is discarded for it.
const MaxRawDeliveryAttributes = 10

// SetContentBasedDeduplication sets a FIFO topic's ContentBasedDeduplication
// (on by default in the fake, the setting most tests want; SNS's own
// default is off): without it, a publish without MessageDeduplicationId is
// refused.
func (s *SNS) SetContentBasedDeduplication(topicARN string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noContentDup[topicARN] = !on
}

// Dropped returns how many deliveries to raw-delivery SQS subscriptions SNS
// discarded because the message had more than 10 attributes.
func (s *SNS) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

type subscription struct {
	url string
	raw bool
}

// Subscribe delivers the topic's messages to the queue with raw message
// delivery: the body is the published message, attributes are SQS message
// attributes.
func (s *SNS) Subscribe(topicARN, queueURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[topicARN] = append(s.subs[topicARN], subscription{url: queueURL, raw: true})
}

// SubscribeEnvelope delivers the topic's messages to the queue the way SNS
// does without raw message delivery: the SQS body is the JSON notification
// envelope (Type, MessageId, TopicArn, Message, Timestamp, MessageAttributes)
// and the SQS message carries no message attributes of its own.
func (s *SNS) SubscribeEnvelope(topicARN, queueURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[topicARN] = append(s.subs[topicARN], subscription{url: queueURL})
}

type envelopeAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

type envelope struct {
	Type              string                       `json:"Type"`
	MessageID         string                       `json:"MessageId"`
	TopicArn          string                       `json:"TopicArn"`
	Message           string                       `json:"Message"`
	Timestamp         string                       `json:"Timestamp"`
	MessageAttributes map[string]envelopeAttribute `json:"MessageAttributes,omitempty"`
}

// validatePublish applies the Publish limits of real SNS.
func validatePublish(fifo bool, body, group, dedup string, attrs map[string]types.MessageAttributeValue) error {
	size := len(body)
	for k, v := range attrs {
		size += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	switch {
	case body == "":
		return fmt.Errorf("empty message")
	case size > MaxPublishBytes:
		return fmt.Errorf("message of %d bytes is longer than the limit of %d bytes", size, MaxPublishBytes)
	case len(group) > MaxIDLength:
		return fmt.Errorf("MessageGroupId of %d characters exceeds %d", len(group), MaxIDLength)
	case len(dedup) > MaxIDLength:
		return fmt.Errorf("MessageDeduplicationId of %d characters exceeds %d", len(dedup), MaxIDLength)
	case fifo && group == "":
		return fmt.Errorf("MessageGroupId required for FIFO topic")
	case !fifo && dedup != "":
		return fmt.Errorf("MessageDeduplicationId is only valid for FIFO topics")
	}
	return nil
}

// Calls returns the number of calls of the named API.
func (s *SNS) Calls(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[api]
}

func (s *SNS) publish(topic, body, group, dedup string, attrs map[string]types.MessageAttributeValue) (string, error) {
	fifo := strings.HasSuffix(topic, ".fifo")
	if err := validatePublish(fifo, body, group, dedup, attrs); err != nil {
		return "", err
	}
	if fifo && dedup == "" && s.noContentDup[topic] {
		return "", fmt.Errorf("the topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	}
	if s.Reject != nil && s.Reject(body) {
		return "", fmt.Errorf("rejected")
	}
	s.nextID++
	id := fmt.Sprintf("sns-%06d", s.nextID)
	if s.sqs != nil {
		for _, sub := range s.subs[topic] {
			if sub.raw && len(attrs) > MaxRawDeliveryAttributes {
				// Discarded as a client-side error, as SNS documents: the
				// publish itself succeeds.
				s.dropped++
				continue
			}
			s.sqs.mu.Lock()
			q, err := s.sqs.queue(&sub.url)
			if err == nil {
				qbody := body
				var av map[string]sqstypes.MessageAttributeValue
				if sub.raw {
					av = make(map[string]sqstypes.MessageAttributeValue, len(attrs))
					for k, v := range attrs {
						av[k] = sqstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
					}
				} else {
					env := envelope{Type: "Notification", MessageID: id, TopicArn: topic, Message: body,
						Timestamp: s.sqs.now().UTC().Format("2006-01-02T15:04:05.000Z")}
					for k, v := range attrs {
						if env.MessageAttributes == nil {
							env.MessageAttributes = map[string]envelopeAttribute{}
						}
						value := aws.ToString(v.StringValue)
						if v.BinaryValue != nil {
							// The JSON envelope carries binary values in base64.
							value = base64.StdEncoding.EncodeToString(v.BinaryValue)
						}
						env.MessageAttributes[k] = envelopeAttribute{Type: aws.ToString(v.DataType), Value: value}
					}
					b, _ := json.Marshal(env)
					qbody = string(b)
				}
				qdedup := dedup
				if q.fifo && qdedup == "" {
					// A FIFO topic without an explicit ID deduplicates on the
					// message, not on the envelope that carries a fresh ID.
					qdedup = contentHash(body)
				}
				_, err = s.sqs.send(q, qbody, group, qdedup, av, 0)
			}
			s.sqs.mu.Unlock()
			if err != nil {
				return "", err
			}
		}
	}
	return id, nil
}

// Publish implements the SNS API.
func (s *SNS) Publish(ctx context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["Publish"]++
	id, err := s.publish(aws.ToString(in.TopicArn), aws.ToString(in.Message), aws.ToString(in.MessageGroupId),
		aws.ToString(in.MessageDeduplicationId), in.MessageAttributes)
	if err != nil {
		return nil, &types.InvalidParameterException{Message: aws.String(err.Error())}
	}
	return &sns.PublishOutput{MessageId: aws.String(id)}, nil
}

// PublishBatch implements the SNS API.
func (s *SNS) PublishBatch(ctx context.Context, in *sns.PublishBatchInput, _ ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["PublishBatch"]++
	if n := len(in.PublishBatchRequestEntries); n == 0 || n > MaxBatchEntries {
		return nil, &types.TooManyEntriesInBatchRequestException{Message: aws.String(fmt.Sprint(n, " entries"))}
	}
	total := 0
	for _, e := range in.PublishBatchRequestEntries {
		total += len(aws.ToString(e.Message)) + len(aws.ToString(e.Subject))
		for k, v := range e.MessageAttributes {
			total += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
		}
	}
	if total > MaxPublishBytes {
		return nil, &types.BatchRequestTooLongException{Message: aws.String(fmt.Sprint(total, " bytes"))}
	}
	out := &sns.PublishBatchOutput{}
	for _, e := range in.PublishBatchRequestEntries {
		id, err := s.publish(aws.ToString(in.TopicArn), aws.ToString(e.Message), aws.ToString(e.MessageGroupId),
			aws.ToString(e.MessageDeduplicationId), e.MessageAttributes)
		if err != nil {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("Rejected"), Message: aws.String(err.Error()), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, types.PublishBatchResultEntry{Id: e.Id, MessageId: aws.String(id)})
	}
	return out, nil
}
