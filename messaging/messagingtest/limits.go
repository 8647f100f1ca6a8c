package messagingtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
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
	SQS LimitsSQS
	SNS LimitsSNS
	// NewQueue and NewTopic create an empty queue or topic for one case. A
	// FIFO queue or topic has no content-based deduplication, the SQS and
	// SNS default.
	NewQueue func(t *testing.T, fifo bool) (url string)
	NewTopic func(t *testing.T, fifo bool) (arn string)
	// Subscribe subscribes a queue to a topic, with raw message delivery or
	// with the SNS JSON envelope; the SNS rules need it.
	Subscribe func(t *testing.T, topicARN, queueURL string, raw bool)
	// Advance moves the implementation's clock forward; the time rules
	// (the deduplication window) need it. Nil when the implementation's
	// time cannot be moved: Unenforced must then say so for those rules.
	Advance func(d time.Duration)
	// Unenforced names the cases the implementation is known not to
	// enforce, or the rules it does not follow, with the reason; they are
	// skipped with that reason. A case the harness cannot run (no Advance,
	// no Subscribe) fails unless it is named here.
	Unenforced map[string]string
}

// Limit case names, for LimitsHarness.Unenforced.
const (
	LimitSQSAttributes        = "sqs/11 message attributes"
	LimitSQSBodySize          = "sqs/body over 1 MiB"
	LimitSQSGroupID           = "sqs/129-character MessageGroupId"
	LimitSQSDedupID           = "sqs/129-character MessageDeduplicationId"
	LimitSQSDedupOnStandard   = "sqs/MessageDeduplicationId on a standard queue"
	LimitSQSSendBatch         = "sqs/SendMessageBatch of 11"
	LimitSQSDeleteBatch       = "sqs/DeleteMessageBatch of 11"
	LimitSQSVisibilityBatch   = "sqs/ChangeMessageVisibilityBatch of 11"
	LimitSQSReceiveMax        = "sqs/ReceiveMessage of 11"
	LimitSQSReceiveVisibility = "sqs/ReceiveMessage visibility over 12 h"
	LimitSQSChangeVisibility  = "sqs/ChangeMessageVisibility over 12 h"
	LimitSNSBodySize          = "sns/message over 256 KiB"
	LimitSNSGroupID           = "sns/129-character MessageGroupId"
	LimitSNSDedupOnStandard   = "sns/MessageDeduplicationId on a standard topic"
	LimitSNSPublishBatch      = "sns/PublishBatch of 11"
)

// Rule names, for LimitsHarness.Unenforced: behaviour of SQS and SNS beyond
// rejecting a request, which RunLimitsSuite checks after the limits.
const (
	// RuleSQSDedupWindow: a FIFO queue drops a message whose deduplication
	// ID it accepted less than 5 minutes before, and accepts it again after.
	RuleSQSDedupWindow = "sqs/FIFO deduplication ends after 5 minutes"
	// RuleSQSDedupRequired: a FIFO queue without content-based
	// deduplication refuses a send without MessageDeduplicationId with
	// InvalidParameterValue.
	RuleSQSDedupRequired = "sqs/FIFO send without MessageDeduplicationId"
	// RuleSNSDedupRequired: a FIFO topic without content-based
	// deduplication refuses a publish without MessageDeduplicationId with
	// InvalidParameter, the code of SNS's InvalidParameterException.
	RuleSNSDedupRequired = "sns/FIFO publish without MessageDeduplicationId"
	// RuleSQSStaleDelete: on a standard queue a delete with an earlier
	// receipt handle of a message succeeds.
	RuleSQSStaleDelete = "sqs/delete with a stale receipt handle on a standard queue"
	// RuleSNSBinaryEnvelope: a Binary message attribute reaches an
	// envelope (non-raw) subscription base64-encoded in Value.
	RuleSNSBinaryEnvelope = "sns/Binary attribute in the envelope"
	// RuleSNSManyAttributes: Publish accepts 11 message attributes, and an
	// envelope subscription gets all 11.
	RuleSNSManyAttributes = "sns/11 message attributes accepted"
	// RuleSNSRawDropsManyAttributes: a raw-delivery SQS subscription gets
	// nothing of a message with 11 attributes: SNS discards it as a
	// client-side error, as its documentation says.
	RuleSNSRawDropsManyAttributes = "sns/11 message attributes dropped by raw delivery"
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
// at each limit, then that it follows the SQS and SNS rules named by the
// Rule constants.
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
		{LimitSQSBodySize, sendStd(&sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1024*1024))}),
			sendStd(&sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1024*1024+1))})},
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
	for _, r := range rules(h) {
		t.Run(r.name, func(t *testing.T) {
			if reason, ok := h.Unenforced[r.name]; ok {
				t.Skip("rule not followed by this implementation: " + reason)
			}
			for _, need := range r.needs {
				if need.missing {
					t.Fatalf("the harness has no %s, which this rule needs; name the rule in Unenforced with the reason", need.what)
				}
			}
			r.run(t)
		})
	}
}

type rule struct {
	name  string
	needs []need
	run   func(t *testing.T)
}

type need struct {
	what    string
	missing bool
}

// apiCode is the error code of an AWS API error, or "" for another error.
func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func rules(h LimitsHarness) []rule {
	ctx := context.Background()
	receive := func(t *testing.T, url string, wait int32) []types.Message {
		t.Helper()
		out, err := h.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: wait, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		return out.Messages
	}
	drain := func(t *testing.T, url string, msgs []types.Message) {
		t.Helper()
		if len(msgs) == 0 {
			return
		}
		var e []types.DeleteMessageBatchRequestEntry
		for i, m := range msgs {
			e = append(e, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := h.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: e}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	noSubscribe := need{what: "Subscribe", missing: h.Subscribe == nil}
	return []rule{
		{name: RuleSQSDedupWindow, needs: []need{{what: "Advance", missing: h.Advance == nil}}, run: func(t *testing.T) {
			url := h.NewQueue(t, true)
			send := func() {
				t.Helper()
				if _, err := h.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"),
					MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")}); err != nil {
					t.Fatalf("send: %v", err)
				}
			}
			send()
			send() // within the window: accepted and dropped
			got := receive(t, url, 1)
			if len(got) != 1 {
				t.Fatalf("%d messages after a duplicate send, want 1", len(got))
			}
			drain(t, url, got)
			h.Advance(DeduplicationWindow + time.Minute)
			send()
			if got := receive(t, url, 1); len(got) != 1 {
				t.Fatalf("a resend 6 minutes later was dropped (%d messages); the window is 5 minutes", len(got))
			}
		}},
		{name: RuleSQSDedupRequired, run: func(t *testing.T) {
			_, err := h.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.NewQueue(t, true)),
				MessageBody: aws.String("m"), MessageGroupId: aws.String("g")})
			// SQS's AWS query protocol spells its codes with the prefix
			// "AWS.SimpleQueueService."; an implementation that answers in
			// that form (fauxqs does) names the same error.
			code := apiCode(err)
			if code != "InvalidParameterValue" && code != "AWS.SimpleQueueService.InvalidParameterValue" {
				t.Fatalf("send without MessageDeduplicationId: %v (code %q), want InvalidParameterValue", err, code)
			}
			if code != "InvalidParameterValue" {
				t.Logf("refused with the query-protocol spelling %q of InvalidParameterValue", code)
			}
		}},
		{name: RuleSNSDedupRequired, run: func(t *testing.T) {
			_, err := h.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(h.NewTopic(t, true)),
				Message: aws.String("m"), MessageGroupId: aws.String("g")})
			if code := apiCode(err); code != "InvalidParameter" {
				t.Fatalf("publish without MessageDeduplicationId: %v (code %q), want InvalidParameter", err, code)
			}
		}},
		{name: RuleSQSStaleDelete, run: func(t *testing.T) {
			url := h.NewQueue(t, false)
			if _, err := h.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
				t.Fatal(err)
			}
			first := receive(t, url, 1)
			if len(first) != 1 {
				t.Fatalf("received %d", len(first))
			}
			if _, err := h.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
				ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
				t.Fatal(err)
			}
			second := receive(t, url, 1)
			if len(second) != 1 {
				t.Fatalf("not received again (%d)", len(second))
			}
			out, err := h.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url),
				Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: first[0].ReceiptHandle}}})
			if err != nil || len(out.Failed) != 0 {
				t.Fatalf("delete with the earlier receipt handle: %v %+v; SQS answers success", err, out)
			}
		}},
		{name: RuleSNSBinaryEnvelope, needs: []need{noSubscribe}, run: func(t *testing.T) {
			topic, url := h.NewTopic(t, false), h.NewQueue(t, false)
			h.Subscribe(t, topic, url, false)
			bin := []byte{0, 1, 2, 0xfa, 0xff}
			if _, err := h.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
				MessageAttributes: map[string]snstypes.MessageAttributeValue{"b": {DataType: aws.String("Binary"), BinaryValue: bin}}}); err != nil {
				t.Fatal(err)
			}
			got := receive(t, url, 2)
			if len(got) != 1 {
				t.Fatalf("received %d", len(got))
			}
			var env struct {
				MessageAttributes map[string]struct{ Type, Value string }
			}
			if err := json.Unmarshal([]byte(aws.ToString(got[0].Body)), &env); err != nil {
				t.Fatalf("envelope: %v", err)
			}
			if a := env.MessageAttributes["b"]; a.Type != "Binary" || a.Value != base64.StdEncoding.EncodeToString(bin) {
				t.Fatalf("binary attribute in the envelope: %+v, want Type Binary and Value %q", a, base64.StdEncoding.EncodeToString(bin))
			}
		}},
		{name: RuleSNSManyAttributes, needs: []need{noSubscribe}, run: func(t *testing.T) {
			topic, env := h.NewTopic(t, false), h.NewQueue(t, false)
			h.Subscribe(t, topic, env, false)
			if _, err := h.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
				MessageAttributes: snsAttrs(11)}); err != nil {
				t.Fatalf("publish with 11 attributes: %v; SNS accepts it", err)
			}
			got := receive(t, env, 2)
			if len(got) != 1 {
				t.Fatalf("envelope subscription got %d messages, want 1", len(got))
			}
			var e struct{ MessageAttributes map[string]json.RawMessage }
			if err := json.Unmarshal([]byte(aws.ToString(got[0].Body)), &e); err != nil || len(e.MessageAttributes) != 11 {
				t.Fatalf("envelope with %d attributes (%v), want 11", len(e.MessageAttributes), err)
			}
		}},
		{name: RuleSNSRawDropsManyAttributes, needs: []need{noSubscribe}, run: func(t *testing.T) {
			topic, raw := h.NewTopic(t, false), h.NewQueue(t, false)
			h.Subscribe(t, topic, raw, true)
			if _, err := h.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
				MessageAttributes: snsAttrs(11)}); err != nil {
				t.Fatalf("publish with 11 attributes: %v; SNS accepts it", err)
			}
			if got := receive(t, raw, 1); len(got) != 0 {
				t.Fatalf("raw-delivery subscription got %d messages with 11 attributes; SNS discards them", len(got))
			}
		}},
	}
}
