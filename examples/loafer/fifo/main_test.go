package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
)

// Against the in-memory FIFO queue, each group's messages run in order.
func TestRunKeepsGroupOrder(t *testing.T) {
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue(queueName)
	for i := range 20 {
		attrs := map[string]string{"tenant_id": fmt.Sprint("t", i%2), "order_id": fmt.Sprint("o", i%4)}
		if _, err := fake.Send(url, fmt.Sprintf(`{"event":"e%02d"}`, i), fmt.Sprint("g", i%4), attrs); err != nil {
			t.Fatal(err)
		}
	}
	runInOrder(t, fake, queueName, func() int { return fake.Len(url) })
}

// The same against the SQS emulator's FIFO queue.
func TestRunKeepsGroupOrderEmulator(t *testing.T) {
	admin := testenv.SQS(t)
	queue := testenv.UniqueName(t, "fifo") + ".fifo"
	url, _ := testenv.CreateQueue(t, admin, queue, true)
	for i := range 20 {
		attrs := map[string]types.MessageAttributeValue{
			"tenant_id": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("t", i%2))},
			"order_id":  {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("o", i%4))},
		}
		if _, err := admin.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
			MessageBody: aws.String(fmt.Sprintf(`{"event":"e%02d"}`, i)), MessageGroupId: aws.String(fmt.Sprint("g", i%4)),
			MessageDeduplicationId: aws.String(fmt.Sprint("d", i)), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	runInOrder(t, admin, queue, func() int { return testenv.QueueLen(t, admin, url) })
}

// runInOrder runs the program's consumer on queue, which holds the messages
// e00 to e19 in four groups, until left reports none left, and checks that
// each group's five messages ran in the order sent.
func runInOrder(t *testing.T, client consumer.SQSClient, queue string, left func() int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string][]string{}
	h := func(ctx context.Context, msg middleware.Message) error {
		mu.Lock()
		seen[middleware.GroupID(msg)] = append(seen[middleware.GroupID(msg)], string(msg.Body()))
		mu.Unlock()
		return handleMessage(ctx, msg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, client, queue, h) }()
	deadline := time.Now().Add(30 * time.Second)
	for left() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 {
		t.Fatalf("groups %v, want 4", seen)
	}
	for g, bodies := range seen {
		if !slices.IsSorted(bodies) || len(bodies) != 5 {
			t.Fatalf("group %s ran %v", g, bodies)
		}
	}
}
