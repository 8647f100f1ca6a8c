package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
)

// Valid orders are confirmed on the topic, an invalid one is handled once
// and reaches the dead-letter queue (a fatal error), and the route's metrics
// count both.
func TestRun(t *testing.T) {
	fake := messagingtest.NewSQS()
	orders, _ := fake.AddQueue(queueName)
	confirmations, _ := fake.AddQueue("confirmations")
	dlq, _ := fake.AddQueue(queueName + "-dlq")
	fake.SetRedrive(orders, dlq, maxReceiveCount)
	topics := messagingtest.NewSNS(fake)
	const topicARN = "arn:aws:sns:us-east-1:000000000000:" + topicName
	topics.Subscribe(topicARN, confirmations)
	for _, body := range []string{
		`{"id":"o-1","customer":"ada","total":12.5}`,
		`{"id":"","customer":"bob","total":1}`,
		`{"id":"o-2","customer":"cy","total":3}`,
	} {
		if _, err := fake.Send(orders, body, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, fake, topics, reg, queueName, topicARN) }()
	deadline := time.Now().Add(10 * time.Second)
	for (fake.Len(orders) > 0 || fake.Len(confirmations) < 2 || fake.Len(dlq) < 1) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := fake.Len(orders); n != 0 {
		t.Fatalf("%d orders left in the queue", n)
	}
	if dead := fake.Bodies(dlq); len(dead) != 1 || dead[0] != `{"id":"","customer":"bob","total":1}` {
		t.Fatalf("dead letters %q", dead)
	}
	got := map[string]confirmation{}
	for _, body := range fake.Bodies(confirmations) {
		var c confirmation
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("confirmation %s: %v", body, err)
		}
		got[c.OrderID] = c
	}
	if len(got) != 2 || got["o-1"].Customer != "ada" || got["o-2"].Message != "order o-2 of 3.00 confirmed" {
		t.Fatalf("confirmations %+v", got)
	}
	ok, failed := counter(t, reg, middleware.MetricProcessed, "success"), counter(t, reg, middleware.MetricProcessed, "error")
	if ok != 2 || failed != 1 {
		t.Fatalf("processed: %v success, %v error; want 2 and 1", ok, failed)
	}
}

// counter sums the samples of the counter family name in reg whose status
// label is status.
func counter(t *testing.T, reg *prometheus.Registry, name, status string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" && l.GetValue() == status {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// The program against the SQS/SNS emulator, with its clients built by the
// client package as main builds them (the connectivity check included): the
// valid order is confirmed through a raw-delivery subscription and the
// invalid one is redriven to the dead-letter queue by the queue's policy.
func TestRunEmulator(t *testing.T) {
	if os.Getenv("SQS_ENDPOINT") == "" || os.Getenv("SNS_ENDPOINT") == "" {
		t.Skip("SQS_ENDPOINT/SNS_ENDPOINT not set (run through scripts/test)")
	}
	ctx := context.Background()
	sqsCfg, snsCfg := testenv.AWSConfig(t), testenv.AWSConfig(t)
	sqsCfg.BaseEndpoint, snsCfg.BaseEndpoint = aws.String(os.Getenv("SQS_ENDPOINT")), aws.String(os.Getenv("SNS_ENDPOINT"))
	sqsClient, err := client.NewSQS(ctx, sqsCfg)
	if err != nil {
		t.Fatal(err)
	}
	snsClient, err := client.NewSNS(ctx, snsCfg)
	if err != nil {
		t.Fatal(err)
	}
	admin, topics := testenv.SQS(t), testenv.SNS(t)
	queue := testenv.UniqueName(t, "typed")
	orders, _ := testenv.CreateQueue(t, admin, queue, false)
	dlq, dlqARN := testenv.CreateQueue(t, admin, queue+"-dlq", false)
	confirmations, confirmationsARN := testenv.CreateQueue(t, admin, queue+"-confirmations", false)
	if _, err := admin.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(orders), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqARN, maxReceiveCount),
	}}); err != nil {
		t.Fatal(err)
	}
	topicARN := testenv.CreateTopic(t, topics, queue, false)
	if _, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint: aws.String(confirmationsARN), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"id":"o-1","customer":"ada","total":12.5}`, `{"id":"","customer":"bob","total":1}`} {
		if _, err := admin.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(orders), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- run(runCtx, sqsClient, snsClient, prometheus.NewRegistry(), queue, topicARN) }()
	deadline := time.Now().Add(30 * time.Second)
	for (testenv.QueueLen(t, admin, confirmations) < 1 || testenv.QueueLen(t, admin, dlq) < 1) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	out, err := admin.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(confirmations), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("%d confirmations, want 1", len(out.Messages))
	}
	var c confirmation
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &c); err != nil || c.OrderID != "o-1" {
		t.Fatalf("confirmation %s (%v)", aws.ToString(out.Messages[0].Body), err)
	}
	dead, err := admin.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead.Messages) != 1 || aws.ToString(dead.Messages[0].Body) != `{"id":"","customer":"bob","total":1}` {
		t.Fatalf("dead letters %+v", dead.Messages)
	}
}
