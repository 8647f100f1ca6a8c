package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/aws/schedulertest"
)

// FIFOOrder is Order routed to a FIFO queue, where every delayed delivery (its
// sleep, its step retries) goes through EventBridge Scheduler.
type FIFOOrder struct{ Order }

// awsQueue is one SQS queue of the AWS World under test.
type awsQueue struct{ url, arn string }

// createTestQueue makes a queue whose messages come back two seconds after a
// receiver dies without deleting them; a FIFO queue deduplicates by content, as
// Scheduler's FIFO targets require.
func createTestQueue(t *testing.T, c *sqs.Client, fifo bool) awsQueue {
	t.Helper()
	url, arn := testenv.CreateQueue(t, c, testenv.UniqueName(t, "rel"), fifo)
	attrs := map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): "2"}
	if fifo {
		attrs[string(sqstypes.QueueAttributeNameContentBasedDeduplication)] = "true"
	}
	if _, err := c.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	return awsQueue{url: url, arn: arn}
}

// poll plays the Lambda SQS event source mapping: it receives batches from q,
// invokes handler, and deletes the messages not reported as failed. With
// faults, some batches are handed to two invocations at once (two receivers of
// one message) and some deletes are lost (the message comes back).
//
// Fault kinds: sqs-dup-receive, sqs-delete-lost.
func poll(ctx context.Context, c *sqs.Client, q awsQueue, handler awsworld.SQSHandler, f *faults) {
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil || len(out.Messages) == 0 {
			if err != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: q.arn,
			})
		}
		invoke := func() map[string]bool {
			hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			failed := map[string]bool{}
			resp, err := handler(hctx, ev)
			if err != nil { // a failed invocation: nothing is deleted
				for _, r := range ev.Records {
					failed[r.MessageId] = true
				}
			}
			for _, bf := range resp.BatchItemFailures {
				failed[bf.ItemIdentifier] = true
			}
			return failed
		}
		var failed map[string]bool
		if f.hit("sqs-dup-receive") {
			var other map[string]bool
			var wg sync.WaitGroup
			wg.Go(func() { other = invoke() })
			failed = invoke()
			wg.Wait()
			for id := range other {
				failed[id] = true
			}
		} else {
			failed = invoke()
		}
		for _, m := range out.Messages {
			if failed[aws.ToString(m.MessageId)] || f.hit("sqs-delete-lost") {
				continue
			}
			_, _ = c.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// TestAWSWorkflowsUnderFaults runs whole workflows on the AWS World (DynamoDB
// Local, SQS in fauxqs, the Scheduler fake), on a standard and on a FIFO queue,
// while every client misbehaves: DynamoDB throttles reads and writes, drops
// connections and loses the responses of committed transactions; SQS throttles
// sends and visibility changes and loses send responses (duplicating messages);
// receivers get the same batch twice and lose deletes; Scheduler throttles,
// loses create responses, and fires schedules twice, early and late. Every run
// must complete with the right output, each step, wait and run must complete
// exactly once in a contiguous log, and each side effect be applied once.
func TestAWSWorkflowsUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workflows against the emulators for tens of seconds")
	}
	t.Parallel()
	db, sq := testenv.DynamoDB(t), testenv.SQS(t)
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	table := testenv.UniqueName(t, "rel")
	if err := awsworld.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	std, fifo := createTestQueue(t, sq, false), createTestQueue(t, sq, true)

	f := newFaults(s, map[string]float64{
		"ddb-throttle-write": 0.03, "ddb-lost-write": 0.03, "ddb-resent-write": 0.03, "ddb-throttle-read": 0.01, "ddb-reset": 0.01,
		"sqs-throttle-send": 0.04, "sqs-lost-send": 0.04, "sqs-throttle-visibility": 0.2,
		"sqs-dup-receive": 0.1, "sqs-delete-lost": 0.05,
		"sched-throttle": 0.04, "sched-lost-create": 0.04, "sched-fired-twice": 0.4, "sched-early": 0.2,
	})
	clock := &schedulerClock{}
	byARN := map[string]string{std.arn: std.url, fifo.arn: fifo.url}
	sched := schedulertest.New(&twiceSender{Sender: sq, f: f}, clock.now, func(arn string) (string, error) {
		if u, ok := byARN[arn]; ok {
			return u, nil
		}
		return "", fmt.Errorf("unknown target %s", arn)
	})
	t.Cleanup(sched.Close)

	var logs syncBuffer // the World's log, shown when a run does not finish
	cfg := awsworld.Config{
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		BaseURL: "https://example.com/v1/workflow", TableName: table, QueueURL: std.url,
		// A lease left behind by a failed release (throttled) holds its delivery
		// up to this long.
		Lease:  5 * time.Second,
		Queues: map[string]awsworld.QueueConfig{"fifo": {URL: fifo.url, ARN: fifo.arn, FIFO: true}},
		Routes: worlds.Routes(worlds.Route[FIFOOrder]("fifo")),
		Scheduler: &awsworld.SchedulerConfig{Client: &faultyScheduler{SchedulerAPI: sched.Client(testenv.AWSConfig(t)), f: f},
			TargetARN: std.arn, RoleARN: "arn:aws:iam::000000000000:role/scheduler"},
	}
	faulty, err := awsworld.New(cfg, &faultyDynamoDB{DynamoDBAPI: db, f: f}, &faultySQS{SQSAPI: sq, f: f})
	if err != nil {
		t.Fatal(err)
	}
	clean, err := awsworld.New(cfg, db, sq) // the test's own view, fault-free
	if err != nil {
		t.Fatal(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: faulty})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	handler := awsworld.Queue(faulty, client.Runner(worlds.Runners(workflow.Use(Order{rec: rec}), workflow.Use(FIFOOrder{Order{rec: rec}}))))

	serveCtx, stop := context.WithCancel(ctx)
	var workers sync.WaitGroup
	for _, q := range []awsQueue{std, fifo, std, fifo} { // two receivers per queue
		workers.Go(func() { poll(serveCtx, sq, q, handler, f) })
	}
	workers.Go(func() { runScheduler(serveCtx, sched, clock, f) })
	defer func() { stop(); workers.Wait() }()

	const runs = 12
	ids := make([]string, runs)
	for i := range runs {
		ids[i] = fmt.Sprintf("aws-chaos-%d-%d", s%100000, i)
		name, start := worlds.WorkflowName[Order](), func() error {
			_, err := workflow.Start(ctx, client, Order{}, i, workflow.WithRunID(ids[i]))
			return err
		}
		if i%2 == 1 {
			name, start = worlds.WorkflowName[FIFOOrder](), func() error {
				_, err := workflow.Start(ctx, client, FIFOOrder{}, i, workflow.WithRunID(ids[i]))
				return err
			}
		}
		startWithRetry(t, s, clean, ids[i], name, start)
	}

	began := time.Now()
	settle := time.AfterFunc(40*time.Second, func() { f.off.Store(true) }) // let stragglers finish fault-free
	defer settle.Stop()
	waiter, err := workflow.NewClient(workflow.Config{World: clean})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		run, err := waiter.Wait(ctx, id)
		if err != nil {
			dump(t, clean, id)
			lines := strings.Split(logs.String(), "\n")
			t.Logf("last of the World's log:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
			// The stuck run's own lines, from the start: the last 60 lines are
			// mostly other runs by the time the wait gives up.
			var own []string
			for _, l := range lines {
				if strings.Contains(l, id+" ") || strings.Contains(l, id+"-") || strings.HasSuffix(l, id) {
					own = append(own, l)
				}
			}
			t.Logf("the World's log lines naming %s:\n%s", id, strings.Join(own, "\n"))
			t.Fatalf("seed %d: wait %s: %v (faults %s)", s, id, err, f)
		}
		if run.Status != worlds.RunCompleted {
			t.Fatalf("seed %d: run %s ended %s: %+v", s, id, run.Status, run.Error)
		}
		if want := strconv.Itoa(2*(i+2) + 1); string(run.Output) != want {
			t.Fatalf("seed %d: run %s output %s, want %s", s, id, run.Output, want)
		}
		checkLog(t, s, clean, id)
		t.Logf("run %s done by %v", id, time.Since(began).Round(time.Millisecond))
	}
	if got, want := rec.count(), runs*4; got != want {
		t.Fatalf("seed %d: %d distinct effects applied, want %d", s, got, want)
	}
	t.Logf("runs=%d lost=0 step re-executions=%d faults=%s", runs, rec.reruns(), f)
	if f.count("sqs-throttle-send", "sqs-lost-send", "sqs-throttle-visibility") == 0 ||
		f.count("sched-fired-twice", "sched-early") == 0 || f.count("ddb-throttle-write", "ddb-lost-write") == 0 {
		t.Fatalf("seed %d: a fault family was never injected (%s); the run proved nothing", s, f)
	}
}

// startWithRetry starts a run with a fixed ID until it sticks, as a caller would
// after a timeout: the run may exist already from an attempt whose response was
// lost, and then only its first delivery may be missing.
func startWithRetry(t *testing.T, s uint64, clean worlds.World, id, workflowName string, start func() error) {
	t.Helper()
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		err := start()
		if err == nil {
			return
		}
		if errors.Is(err, worlds.ErrRunExists) || attempt > 0 {
			if run, gerr := clean.GetRun(ctx, id); gerr == nil && run.EventCount > 0 {
				_, qerr := clean.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: workflowName, RunID: id},
					worlds.QueueOptions{ID: "start-" + id})
				if qerr == nil {
					return
				}
			}
		}
		if attempt > 50 {
			t.Fatalf("seed %d: start %s: %v", s, id, err)
		}
	}
}
