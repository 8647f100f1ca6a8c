package consumer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// TestEmulatorConformance runs the consumer suite against the SQS emulator
// (standard and FIFO queues).
func TestEmulatorConformance(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	messagingtest.RunConsumerSuite(t, messagingtest.Harness{
		Client: client,
		NewQueue: func(t *testing.T, fifo bool) string {
			url, _ := testenv.CreateQueue(t, client, testenv.UniqueName(t, "cq"), fifo)
			return url
		},
		Len: func(t *testing.T, url string) int { return testenv.QueueLen(t, client, url) },
	})
}

// TestEmulatorScheduledRetry drives the Scheduled Retry model against the
// emulator: the fake scheduler delivers the scheduled SendMessage to the real
// queue, and exhausted messages land in the real DLQ.
func TestEmulatorScheduledRetry(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, arn := testenv.CreateQueue(t, client, testenv.UniqueName(t, "entry"), true)
	dlq, _ := testenv.CreateQueue(t, client, testenv.UniqueName(t, "dlq"), true)
	if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
		MessageBody: aws.String("always-fails"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")}); err != nil {
		t.Fatal(err)
	}
	sched := messagingtest.NewScheduler(client)
	var attempts, retries, dead atomic.Int64
	r, err := router.New(url, func(context.Context, middleware.Message) error {
		attempts.Add(1)
		return errors.New("transient")
	}, router.WithWaitTimeSeconds(1), router.WithRunMode(router.PerGroupID), router.WithScheduledRetry(
		router.WithSchedulerIdentity(arn, "arn:aws:iam::000000000000:role/scheduler"),
		router.WithScheduledDLQ(dlq), router.WithMaxRetryCount(1), router.WithBackoff(time.Millisecond, time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(client, r, consumer.WithSchedulerClient(sched),
		consumer.WithRetryMetric(func(string) { retries.Add(1) }), consumer.WithDeadLetterMetric(func(string) { dead.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx) }()
	waitFor(t, func() bool { return retries.Load() == 1 && testenv.QueueLen(t, client, url) == 0 })
	if n, err := sched.Fire(ctx, time.Now().Add(time.Hour), url); err != nil || n != 1 {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	waitFor(t, func() bool { return dead.Load() == 1 && testenv.QueueLen(t, client, url) == 0 })
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if attempts.Load() != 2 || testenv.QueueLen(t, client, dlq) != 1 {
		t.Fatalf("attempts %d, dlq %d", attempts.Load(), testenv.QueueLen(t, client, dlq))
	}
}
