package fake

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-go/cairn/messaging/producer"
)

var _ producer.SNSClient = (*SNSClient)(nil)

// SNSClient is a producer.SNSClient whose methods record their input and call
// the matching func field; a nil field answers a nil output and a nil error.
// It is safe for concurrent use.
type SNSClient struct {
	PublishFunc      func(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatchFunc func(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)

	publish calls[*sns.PublishInput]
	batch   calls[*sns.PublishBatchInput]
}

// Publish records params and calls PublishFunc.
func (c *SNSClient) Publish(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error) {
	return call(ctx, &c.publish, c.PublishFunc, params, optFns)
}

// PublishBatch records params and calls PublishBatchFunc.
func (c *SNSClient) PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	return call(ctx, &c.batch, c.PublishBatchFunc, params, optFns)
}

// PublishCalls returns the inputs of Publish, in call order.
func (c *SNSClient) PublishCalls() []*sns.PublishInput { return c.publish.list() }

// PublishBatchCalls returns the inputs of PublishBatch, in call order.
func (c *SNSClient) PublishBatchCalls() []*sns.PublishBatchInput { return c.batch.list() }
