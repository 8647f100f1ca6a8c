package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// Against the in-memory SNS fanning out to SQS, every message arrives, and
// the three orders of one tenant and order share one FIFO group.
func TestRun(t *testing.T) {
	fake := messagingtest.NewSQS()
	std, _ := fake.AddQueue("events")
	fifo, _ := fake.AddQueue("orders.fifo")
	s := messagingtest.NewSNS(fake)
	const stdARN, fifoARN = "arn:aws:sns:us-east-1:000000000000:example-events", "arn:aws:sns:us-east-1:000000000000:example-orders.fifo"
	s.Subscribe(stdARN, std)
	s.Subscribe(fifoARN, fifo)
	if err := run(context.Background(), s, stdARN, fifoARN); err != nil {
		t.Fatal(err)
	}
	if fake.Len(std) != 3 || fake.Len(fifo) != 3 {
		t.Fatalf("standard %d, fifo %d", fake.Len(std), fake.Len(fifo))
	}
}

// The program against the SNS/SQS emulator, its client built by
// client.NewSNS with the connectivity check, as main builds it: both topics
// deliver every message, and the FIFO topic's three orders arrive in one
// group, with the group ID the key-based generator derived.
func TestRunEmulator(t *testing.T) {
	admin, topics := testenv.SQS(t), testenv.SNS(t)
	cfg := testenv.AWSConfig(t)
	cfg.BaseEndpoint = aws.String(os.Getenv(testenv.EnvSNS))
	ctx := context.Background()
	snsClient, err := client.NewSNS(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName(t, "publish")
	stdURL, stdQueueARN := testenv.CreateQueue(t, admin, name, false)
	fifoURL, fifoQueueARN := testenv.CreateQueue(t, admin, name, true)
	stdARN, fifoARN := testenv.CreateTopic(t, topics, name, false), testenv.CreateTopic(t, topics, name, true)
	for topic, queue := range map[string]string{stdARN: stdQueueARN, fifoARN: fifoQueueARN} {
		if _, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
			Endpoint: aws.String(queue), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(ctx, snsClient, stdARN, fifoARN); err != nil {
		t.Fatal(err)
	}
	if n := testenv.QueueLen(t, admin, stdURL); n != 3 {
		t.Fatalf("standard queue holds %d messages, want 3", n)
	}
	groups := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for received := 0; received < 3 && time.Now().Before(deadline); {
		out, err := admin.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(fifoURL), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			groups[m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]]++
			received++
			if _, err := admin.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(fifoURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(groups) != 1 {
		t.Fatalf("FIFO messages by group %v, want the three in one group", groups)
	}
	for g, n := range groups {
		if g == "" || n != 3 {
			t.Fatalf("FIFO messages by group %v, want the three in one named group", groups)
		}
	}
}
