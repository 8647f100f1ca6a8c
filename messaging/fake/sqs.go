package fake

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
)

var (
	_ consumer.SQSClient         = (*SQSClient)(nil)
	_ consumer.BatchDeleteClient = (*SQSClient)(nil)
)

// SQSClient is a consumer.SQSClient whose methods record their input and call
// the matching func field; a nil field answers a nil output and a nil error.
// It is safe for concurrent use.
type SQSClient struct {
	ReceiveMessageFunc          func(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageFunc           func(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibilityFunc func(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueUrlFunc             func(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SendMessageFunc             func(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessageBatchFunc      func(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)

	receive    calls[*sqs.ReceiveMessageInput]
	del        calls[*sqs.DeleteMessageInput]
	visibility calls[*sqs.ChangeMessageVisibilityInput]
	queueURL   calls[*sqs.GetQueueUrlInput]
	send       calls[*sqs.SendMessageInput]
	delBatch   calls[*sqs.DeleteMessageBatchInput]
}

// ReceiveMessage records params and calls ReceiveMessageFunc.
func (c *SQSClient) ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return call(ctx, &c.receive, c.ReceiveMessageFunc, params, optFns)
}

// DeleteMessage records params and calls DeleteMessageFunc.
func (c *SQSClient) DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return call(ctx, &c.del, c.DeleteMessageFunc, params, optFns)
}

// ChangeMessageVisibility records params and calls ChangeMessageVisibilityFunc.
func (c *SQSClient) ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return call(ctx, &c.visibility, c.ChangeMessageVisibilityFunc, params, optFns)
}

// GetQueueUrl records params and calls GetQueueUrlFunc.
func (c *SQSClient) GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return call(ctx, &c.queueURL, c.GetQueueUrlFunc, params, optFns)
}

// SendMessage records params and calls SendMessageFunc.
func (c *SQSClient) SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return call(ctx, &c.send, c.SendMessageFunc, params, optFns)
}

// DeleteMessageBatch records params and calls DeleteMessageBatchFunc. The
// consumer uses it on a router.WithDeleteBatch route only.
func (c *SQSClient) DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return call(ctx, &c.delBatch, c.DeleteMessageBatchFunc, params, optFns)
}

// ReceiveMessageCalls returns the inputs of ReceiveMessage, in call order.
func (c *SQSClient) ReceiveMessageCalls() []*sqs.ReceiveMessageInput { return c.receive.list() }

// DeleteMessageCalls returns the inputs of DeleteMessage, in call order.
func (c *SQSClient) DeleteMessageCalls() []*sqs.DeleteMessageInput { return c.del.list() }

// ChangeMessageVisibilityCalls returns the inputs of ChangeMessageVisibility,
// in call order.
func (c *SQSClient) ChangeMessageVisibilityCalls() []*sqs.ChangeMessageVisibilityInput {
	return c.visibility.list()
}

// GetQueueURLCalls returns the inputs of GetQueueUrl, in call order.
func (c *SQSClient) GetQueueURLCalls() []*sqs.GetQueueUrlInput { return c.queueURL.list() }

// SendMessageCalls returns the inputs of SendMessage, in call order.
func (c *SQSClient) SendMessageCalls() []*sqs.SendMessageInput { return c.send.list() }

// DeleteMessageBatchCalls returns the inputs of DeleteMessageBatch, in call
// order.
func (c *SQSClient) DeleteMessageBatchCalls() []*sqs.DeleteMessageBatchInput {
	return c.delBatch.list()
}
