package messagingtest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// LimitsSQS is the SQS surface the limits suite drives (*sqs.Client and
// *SQS both implement it).
type LimitsSQS interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// LimitsSNS is the SNS surface the limits suite drives.
type LimitsSNS interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatch(ctx context.Context, in *sns.PublishBatchInput, opts ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

// LimitsHarness connects RunLimitsSuite to an SQS/SNS implementation.
type LimitsHarness struct {
	SQS      LimitsSQS
	SNS      LimitsSNS
	NewQueue func(t *testing.T, fifo bool) (url string)
	NewTopic func(t *testing.T, fifo bool) (arn string)
	// Unenforced names the cases the implementation is known not to
	// enforce, with the reason; they are skipped with that reason.
	Unenforced map[string]string
}

// Limit case names, for LimitsHarness.Unenforced.
const (
	LimitSQSAttributes        = "sqs/11 message attributes"
	LimitSQSBodySize          = "sqs/body over 256 KiB"
	LimitSQSGroupID           = "sqs/129-character MessageGroupId"
	LimitSQSDedupID           = "sqs/129-character MessageDeduplicationId"
	LimitSQSDedupOnStandard   = "sqs/MessageDeduplicationId on a standard queue"
	LimitSQSSendBatch         = "sqs/SendMessageBatch of 11"
	LimitSQSDeleteBatch       = "sqs/DeleteMessageBatch of 11"
	LimitSQSVisibilityBatch   = "sqs/ChangeMessageVisibilityBatch of 11"
	LimitSQSReceiveMax        = "sqs/ReceiveMessage of 11"
	LimitSQSReceiveVisibility = "sqs/ReceiveMessage visibility over 12 h"
	LimitSQSChangeVisibility  = "sqs/ChangeMessageVisibility over 12 h"
	LimitSNSAttributes        = "sns/11 message attributes"
	LimitSNSBodySize          = "sns/message over 256 KiB"
	LimitSNSGroupID           = "sns/129-character MessageGroupId"
	LimitSNSDedupOnStandard   = "sns/MessageDeduplicationId on a standard topic"
	LimitSNSPublishBatch      = "sns/PublishBatch of 11"
)

func sqsAttrs(n int) map[string]types.MessageAttributeValue {
	m := make(map[string]types.MessageAttributeValue, n)
	for i := range n {
		m["a"+strconv.Itoa(i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	return m
}

func snsAttrs(n int) map[string]snstypes.MessageAttributeValue {
	m := make(map[string]snstypes.MessageAttributeValue, n)
	for i := range n {
		m["a"+strconv.Itoa(i)] = snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	return m
}

// RunLimitsSuite checks that the implementation rejects what real SQS and
// SNS reject (the limits of the AWS API references) and accepts the values
// at each limit.
func RunLimitsSuite(t *testing.T, h LimitsHarness) {
	ctx := context.Background()
	type check struct {
		name        string
		valid, over func(t *testing.T) error // valid may be nil
	}
	id129 := strings.Repeat("g", 129)
	id128 := strings.Repeat("g", 128)
	sendStd := func(in *sqs.SendMessageInput) func(t *testing.T) error {
		return func(t *testing.T) error {
			in.QueueUrl = aws.String(h.NewQueue(t, false))
			_, err := h.SQS.SendMessage(ctx, in)
			return err
		}
	}
	sendFIFO := func(in *sqs.SendMessageInput) func(t *testing.T) error {
		return func(t *testing.T) error {
			in.QueueUrl = aws.String(h.NewQueue(t, true))
			_, err := h.SQS.SendMessage(ctx, in)
			return err
		}
	}
	received := func(t *testing.T) (url string, receipt *string) {
		url = h.NewQueue(t, false)
		if _, err := h.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
			t.Fatal(err)
		}
		out, err := h.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v", err)
		}
		return url, out.Messages[0].ReceiptHandle
	}
	elevenSend := func(t *testing.T) error {
		url := h.NewQueue(t, false)
		var e []types.SendMessageBatchRequestEntry
		for i := range 11 {
			e = append(e, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m")})
		}
		_, err := h.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: e})
		return err
	}
	publish := func(fifo bool, in *sns.PublishInput) func(t *testing.T) error {
		return func(t *testing.T) error {
			in.TopicArn = aws.String(h.NewTopic(t, fifo))
			_, err := h.SNS.Publish(ctx, in)
			return err
		}
	}
	checks := []check{
		{LimitSQSAttributes, sendStd(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageAttributes: sqsAttrs(10)}),
			sendStd(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageAttributes: sqsAttrs(11)})},
		{LimitSQSBodySize, sendStd(&sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 256*1024))}),
			sendStd(&sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 256*1024+1))})},
		{LimitSQSGroupID, sendFIFO(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageGroupId: aws.String(id128), MessageDeduplicationId: aws.String("d")}),
			sendFIFO(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageGroupId: aws.String(id129), MessageDeduplicationId: aws.String("d")})},
		{LimitSQSDedupID, sendFIFO(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(id128)}),
			sendFIFO(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(id129)})},
		{LimitSQSDedupOnStandard, sendStd(&sqs.SendMessageInput{MessageBody: aws.String("m")}),
			sendStd(&sqs.SendMessageInput{MessageBody: aws.String("m"), MessageDeduplicationId: aws.String("d")})},
		{LimitSQSSendBatch, nil, elevenSend},
		{LimitSQSDeleteBatch, nil, func(t *testing.T) error {
			url, receipt := received(t)
			var e []types.DeleteMessageBatchRequestEntry
			for i := range 11 {
				e = append(e, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: receipt})
			}
			_, err := h.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: e})
			return err
		}},
		{LimitSQSVisibilityBatch, nil, func(t *testing.T) error {
			url, receipt := received(t)
			var e []types.ChangeMessageVisibilityBatchRequestEntry
			for i := range 11 {
				e = append(e, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: receipt, VisibilityTimeout: 30})
			}
			_, err := h.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: e})
			return err
		}},
		{LimitSQSReceiveMax, nil, func(t *testing.T) error {
			_, err := h.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.NewQueue(t, false)), MaxNumberOfMessages: 11})
			return err
		}},
		{LimitSQSReceiveVisibility, nil, func(t *testing.T) error {
			_, err := h.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(h.NewQueue(t, false)), MaxNumberOfMessages: 1, VisibilityTimeout: 43201})
			return err
		}},
		{LimitSQSChangeVisibility, func(t *testing.T) error {
			url, receipt := received(t)
			_, err := h.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: receipt, VisibilityTimeout: 43000})
			return err
		}, func(t *testing.T) error {
			url, receipt := received(t)
			_, err := h.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: receipt, VisibilityTimeout: 43201})
			return err
		}},
		{LimitSNSAttributes, publish(false, &sns.PublishInput{Message: aws.String("m"), MessageAttributes: snsAttrs(10)}),
			publish(false, &sns.PublishInput{Message: aws.String("m"), MessageAttributes: snsAttrs(11)})},
		{LimitSNSBodySize, publish(false, &sns.PublishInput{Message: aws.String(strings.Repeat("x", 256*1024))}),
			publish(false, &sns.PublishInput{Message: aws.String(strings.Repeat("x", 256*1024+1))})},
		{LimitSNSGroupID, publish(true, &sns.PublishInput{Message: aws.String("m"), MessageGroupId: aws.String(id128), MessageDeduplicationId: aws.String("d")}),
			publish(true, &sns.PublishInput{Message: aws.String("m"), MessageGroupId: aws.String(id129), MessageDeduplicationId: aws.String("d")})},
		{LimitSNSDedupOnStandard, publish(false, &sns.PublishInput{Message: aws.String("m")}),
			publish(false, &sns.PublishInput{Message: aws.String("m"), MessageDeduplicationId: aws.String("d")})},
		{LimitSNSPublishBatch, nil, func(t *testing.T) error {
			var e []snstypes.PublishBatchRequestEntry
			for i := range 11 {
				e = append(e, snstypes.PublishBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), Message: aws.String("m")})
			}
			_, err := h.SNS.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: aws.String(h.NewTopic(t, false)), PublishBatchRequestEntries: e})
			return err
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.valid != nil {
				if err := c.valid(t); err != nil {
					t.Fatalf("value at the limit rejected: %v", err)
				}
			}
			if reason, ok := h.Unenforced[c.name]; ok {
				t.Skip("over-limit case not enforced by this implementation: " + reason)
			}
			if err := c.over(t); err == nil {
				t.Fatal("value over the limit accepted; real AWS rejects it")
			}
		})
	}
}
