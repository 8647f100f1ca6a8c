package producer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/producer"
)

// TestEmulatorFanOut publishes single and batch messages to standard and FIFO
// topics on the emulator and reads them from subscribed queues.
func TestEmulatorFanOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	snsc, sqsc := testenv.SNS(t), testenv.SQS(t)
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			topic := testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "t"), fifo)
			url, arn := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "sub"), fifo)
			if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
				Endpoint: aws.String(arn), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
				t.Fatal(err)
			}
			p, _ := producer.New(snsc, producer.WithGroupIDGenerator(idgen.NewKeyBased(idgen.WithFields("body"))),
				producer.WithDeduplicationIDGenerator(idgen.NewRandom()), producer.WithBodyField("body"))
			if _, err := p.Publish(ctx, &producer.PublishInput{TopicARN: topic, Message: "single"}); err != nil {
				t.Fatal(err)
			}
			var entries []*producer.PublishBatchEntry
			for i := range 12 {
				entries = append(entries, &producer.PublishBatchEntry{Message: fmt.Sprint("batch", i)})
			}
			res, err := p.PublishAll(ctx, topic, entries)
			if err != nil || len(res.Failed()) != 0 || res.Calls != 2 {
				t.Fatalf("PublishAll = %+v, %v", res, err)
			}
			got := map[string]bool{}
			deadline := time.Now().Add(15 * time.Second)
			for len(got) < 13 && time.Now().Before(deadline) {
				out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range out.Messages {
					got[aws.ToString(m.Body)] = true
					_, _ = sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
				}
			}
			if len(got) != 13 || !got["single"] || !got["batch11"] {
				t.Fatalf("received %d distinct messages: %v", len(got), got)
			}
		})
	}
}
