package messagingtest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SNS is an in-memory SNS that enforces the batch limits (10 entries, 256 KB)
// and the FIFO ID rules, and fans out to SQS queues (raw delivery).
type SNS struct {
	mu     sync.Mutex
	sqs    *SQS
	subs   map[string][]string // topic ARN -> queue URLs
	calls  map[string]int
	nextID int
	// Reject, when set, makes an entry fail with code "Rejected".
	Reject func(body string) bool
}

// NewSNS returns a fake that delivers to sqs (which may be nil).
func NewSNS(sqs *SQS) *SNS {
	return &SNS{sqs: sqs, subs: map[string][]string{}, calls: map[string]int{}}
}

// Subscribe delivers the topic's messages to the queue.
func (s *SNS) Subscribe(topicARN, queueURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[topicARN] = append(s.subs[topicARN], queueURL)
}

// Calls returns the number of calls of the named API.
func (s *SNS) Calls(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[api]
}

func (s *SNS) publish(topic, body, group, dedup string, attrs map[string]types.MessageAttributeValue) (string, error) {
	fifo := strings.HasSuffix(topic, ".fifo")
	if fifo && group == "" {
		return "", fmt.Errorf("MessageGroupId required for FIFO topic")
	}
	if !fifo && (group != "" && dedup != "") {
		return "", fmt.Errorf("MessageDeduplicationId not allowed on standard topic")
	}
	if s.Reject != nil && s.Reject(body) {
		return "", fmt.Errorf("rejected")
	}
	s.nextID++
	id := fmt.Sprintf("sns-%06d", s.nextID)
	if s.sqs != nil {
		for _, url := range s.subs[topic] {
			s.sqs.mu.Lock()
			q, err := s.sqs.queue(&url)
			if err == nil {
				av := make(map[string]sqstypes.MessageAttributeValue, len(attrs))
				for k, v := range attrs {
					av[k] = sqstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
				}
				_, err = s.sqs.send(q, body, group, dedup, av, 0)
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
	if n := len(in.PublishBatchRequestEntries); n == 0 || n > 10 {
		return nil, &types.TooManyEntriesInBatchRequestException{Message: aws.String(fmt.Sprint(n, " entries"))}
	}
	total := 0
	for _, e := range in.PublishBatchRequestEntries {
		total += len(aws.ToString(e.Message)) + len(aws.ToString(e.Subject))
		for k, v := range e.MessageAttributes {
			total += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
		}
	}
	if total > 256*1024 {
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
