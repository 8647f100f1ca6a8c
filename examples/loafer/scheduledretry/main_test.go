package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/fake"
	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// checkRetries checks that the program made its five retry schedules and
// reported them, and then the dead letter, to its hooks.
func checkRetries(t *testing.T, sched *messagingtest.Scheduler, logs *fake.LogHandler) {
	t.Helper()
	if n := len(sched.Schedules()); n != 5 {
		t.Fatalf("%d retry schedules, want 5 (WithMaxRetryCount(5))", n)
	}
	if r, d := count(logs, "retry"), count(logs, "dead-letter"); r != 5 || d != 1 {
		t.Fatalf("hooks reported %d retries and %d dead letters, want 5 and 1", r, d)
	}
}

// count is how many records logs holds with message msg.
func count(logs *fake.LogHandler, msg string) int {
	n := 0
	for _, r := range logs.Records() {
		if r.Message == msg {
			n++
		}
	}
	return n
}

// The program's always-failing handler sends a message through its five
// scheduled retries, each a schedule the in-memory Scheduler fires back into
// the entry queue, and then to the DLQ, reporting each step to its hooks.
func TestRunRetriesThenDeadLetters(t *testing.T) {
	mem := messagingtest.NewSQS()
	entry, _ := mem.AddQueue("orders.fifo")
	dlq, _ := mem.AddQueue("orders-dlq.fifo")
	if _, err := mem.Send(entry, `{"order":"o-1"}`, "customer-1", nil); err != nil {
		t.Fatal(err)
	}
	sched := messagingtest.NewScheduler(mem)
	logs := fake.NewLogHandler()
	log := slog.New(logs)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, log, mem, sched) }()

	// Each retry is due up to 15 minutes ahead; fire whatever is scheduled as
	// if that time had come, until the message reaches the DLQ.
	deadline := time.Now().Add(20 * time.Second)
	for mem.Len(dlq) == 0 && time.Now().Before(deadline) {
		if _, err := sched.Fire(ctx, time.Now().Add(time.Hour), ""); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	if got := mem.Bodies(dlq); len(got) != 1 || got[0] != `{"order":"o-1"}` {
		t.Fatalf("DLQ holds %q, want the one message", got)
	}
	if n := mem.Len(entry); n != 0 {
		t.Fatalf("%d messages left on the entry queue", n)
	}
	checkRetries(t, sched, logs)
}

// The same against the SQS emulator. The program names its queues, so this is
// the one test that creates "orders.fifo" and "orders-dlq.fifo" there; the
// DLQ URL it hard-codes is AWS's, which the emulator resolves by queue name.
func TestRunRetriesThenDeadLettersEmulator(t *testing.T) {
	admin := testenv.SQS(t)
	entry, _ := testenv.CreateQueue(t, admin, "orders", true)
	dlq, _ := testenv.CreateQueue(t, admin, "orders-dlq", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := admin.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(entry), MessageBody: aws.String(`{"order":"o-1"}`),
		MessageGroupId: aws.String("customer-1"), MessageDeduplicationId: aws.String("o-1")}); err != nil {
		t.Fatal(err)
	}
	sched := messagingtest.NewScheduler(admin)
	logs := fake.NewLogHandler()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, slog.New(logs), admin, sched) }()
	deadline := time.Now().Add(60 * time.Second)
	for testenv.QueueLen(t, admin, dlq) == 0 && time.Now().Before(deadline) {
		if _, err := sched.Fire(ctx, time.Now().Add(time.Hour), ""); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	out, err := admin.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != `{"order":"o-1"}` {
		t.Fatalf("DLQ holds %+v, want the one message", out.Messages)
	}
	if n := testenv.QueueLen(t, admin, entry); n != 0 {
		t.Fatalf("%d messages left on the entry queue", n)
	}
	checkRetries(t, sched, logs)
}
