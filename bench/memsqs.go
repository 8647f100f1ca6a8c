package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// memSQS is an endless in-memory SQS queue: it hands out prebuilt messages
// until a quota is used up, counts deletes and API calls, and blocks
// receives once the quota is exhausted, like an empty long poll. Its own
// allocations are one output per call, so the figures measure the library.
type memSQS struct {
	remaining atomic.Int64
	deleted   atomic.Int64
	calls     atomic.Int64
	target    int64
	done      chan struct{}
	once      sync.Once
	batch     []types.Message
}

func newMemSQS(n int, fifo bool) *memSQS {
	m := &memSQS{target: int64(n), done: make(chan struct{})}
	m.remaining.Store(int64(n))
	for i := range 10 {
		attrs := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"}
		if fifo {
			attrs["MessageGroupId"] = "group-" + strconv.Itoa(i)
		}
		m.batch = append(m.batch, types.Message{
			MessageId:     aws.String("00000000-0000-4000-8000-00000000000" + strconv.Itoa(i)),
			ReceiptHandle: aws.String("receipt-" + strconv.Itoa(i)),
			Body:          aws.String(`{"order":"o-1","total":42}`),
			Attributes:    attrs,
		})
	}
	return m
}

func (m *memSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	m.calls.Add(1)
	want := int64(min(max(in.MaxNumberOfMessages, 1), 10))
	for {
		left := m.remaining.Load()
		if left <= 0 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		k := min(want, left)
		if m.remaining.CompareAndSwap(left, left-k) {
			return &sqs.ReceiveMessageOutput{Messages: m.batch[:k]}, nil
		}
	}
}

func (m *memSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	m.calls.Add(1)
	m.ack(len(in.Entries))
	return &sqs.DeleteMessageBatchOutput{}, nil
}

func (m *memSQS) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	m.calls.Add(1)
	m.ack(1)
	return &sqs.DeleteMessageOutput{}, nil
}

func (m *memSQS) ack(n int) {
	if m.deleted.Add(int64(n)) >= m.target {
		m.once.Do(func() { close(m.done) })
	}
}

func (m *memSQS) ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	m.calls.Add(1)
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

func (m *memSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	m.calls.Add(1)
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (m *memSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/000000000000/" + aws.ToString(in.QueueName))}, nil
}

func (m *memSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	m.calls.Add(1)
	return &sqs.SendMessageOutput{MessageId: aws.String("sent")}, nil
}
