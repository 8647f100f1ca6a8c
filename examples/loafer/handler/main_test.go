package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// The program's consumer, run against the in-memory SQS, handles and
// deletes every message.
func TestRun(t *testing.T) {
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue(queueName)
	for _, body := range []string{`{"id":"u-1","text":"a"}`, `{"id":"u-2","text":"b"}`} {
		if _, err := fake.Send(url, body, "", map[string]string{"source": "test"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, fake, queueName) }()
	deadline := time.Now().Add(10 * time.Second)
	for fake.Len(url) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := fake.Len(url); n != 0 {
		t.Fatalf("%d messages left", n)
	}
}

// The program against the SQS emulator, its client built by client.NewSQS
// with the connectivity check, as main builds it: every message is handled
// and deleted (in DeleteMessageBatch requests).
func TestRunEmulator(t *testing.T) {
	admin := testenv.SQS(t)
	cfg := testenv.AWSConfig(t)
	cfg.BaseEndpoint = aws.String(os.Getenv(testenv.EnvSQS))
	sqsClient, err := client.NewSQS(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	queue := testenv.UniqueName(t, "handler")
	url, _ := testenv.CreateQueue(t, admin, queue, false)
	for _, body := range []string{`{"id":"u-1","text":"a"}`, `{"id":"u-2","text":"b"}`, `{"id":"u-3","text":"c"}`} {
		if _, err := admin.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, sqsClient, queue) }()
	deadline := time.Now().Add(30 * time.Second)
	for testenv.QueueLen(t, admin, url) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := testenv.QueueLen(t, admin, url); n != 0 {
		t.Fatalf("%d messages left", n)
	}
}
