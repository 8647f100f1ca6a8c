package awsworld_test

import (
	"context"
	"errors"
	"fmt"
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
)

// crashingSQS dies before every SendMessage reaches SQS, as a process killed
// between writing a queue record and sending its message.
type crashingSQS struct{ *sqs.Client }

func (crashingSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("killed before the send")
}

// queueUnsent queues the first delivery of runID, start-<runID>, through a
// World whose process dies before the message is sent: the record is written,
// no message points to it.
func queueUnsent(t *testing.T, e *env, runID string) {
	t.Helper()
	crashed, err := awsworld.New(e.cfg, e.db, crashingSQS{e.sqs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.Queue(context.Background(), worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: runID}, worlds.QueueOptions{ID: "start-" + runID}); err == nil {
		t.Fatal("the crashed Queue call succeeded")
	}
}

func queueRecord(t *testing.T, e *env, id string) map[string]ddbAttr {
	t.Helper()
	return e.rawItem(t, "QUEUE#"+id, "META")
}

// A crash between the queue record write and the SQS send leaves a record no
// message points to. Sweep leaves it alone within the lease, then sends it
// once, and the run completes.
func TestSweepRecoversACrashBetweenRecordAndSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	mustAppend(t, e.w, "orphan", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	queueUnsent(t, e, "orphan")
	if queueRecord(t, e, "start-orphan") == nil {
		t.Fatal("no queue record before the crash")
	}
	if n := testenv.QueueLen(t, e.sqs, e.url); n != 0 {
		t.Fatalf("%d messages after the crash", n)
	}
	res, err := e.w.Sweep(ctx, awsworld.SweepOptions{})
	if err != nil || len(res.Resent) != 0 {
		t.Fatalf("sweep within the lease = %+v, %v; want nothing sent", res, err)
	}
	e.clock.Advance(awsworld.DefaultLease + 5*time.Second)
	var swept awsworld.SweepResult
	waitFor(t, "the sweep to see the overdue record", func() bool {
		swept, err = awsworld.Sweep(e.w)(ctx) // the Lambda entry point
		if err != nil {
			t.Fatal(err)
		}
		return swept.Overdue > 0
	})
	if len(swept.Resent) != 1 || swept.Resent[0] != "start-orphan" {
		t.Fatalf("sweep = %+v, want start-orphan sent again", swept)
	}
	if again, err := e.w.Sweep(ctx, awsworld.SweepOptions{}); err != nil || len(again.Resent) != 0 {
		t.Fatalf("second sweep = %+v, %v; want nothing sent twice", again, err)
	}
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(&stepRunner{})), map[string]string{e.arn: e.url}, runDone(t, e.w, "orphan"))
}

// A delivery received before and lost (a failed delivery whose message went to
// the dead-letter queue) waits for DeadLetterRetention, the time `cairn
// redrive` has to move it, before Sweep sends it itself.
func TestSweepWaitsForDeadLetterRetentionAfterAReceive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.DeadLetterRetention = time.Hour })
	ctx := context.Background()
	startRun(t, e.w, "dead")
	// Receive it and fail it, then lose the message as the dead-letter queue
	// would hold it.
	failing := awsworld.Queue(e.w, failRunner{})
	batch := receiveBatch(t, e, 1)
	if resp, _ := failing(ctx, batch); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	deleteBatch(t, e, batch)
	e.clock.Advance(30 * time.Minute)
	waitFor(t, "the sweep to see the overdue record", func() bool {
		res, err := e.w.Sweep(ctx, awsworld.SweepOptions{})
		if err != nil || len(res.Resent) != 0 {
			t.Fatalf("sweep before DeadLetterRetention = %+v, %v", res, err)
		}
		return res.Waiting == 1
	})
	e.clock.Advance(31 * time.Minute)
	res, err := e.w.Sweep(ctx, awsworld.SweepOptions{DryRun: true})
	if err != nil || len(res.Resent) != 1 {
		t.Fatalf("dry run = %+v, %v", res, err)
	}
	if n := testenv.QueueLen(t, e.sqs, e.url); n != 0 {
		t.Fatalf("a dry run sent %d messages", n)
	}
	if res, err := e.w.Sweep(ctx, awsworld.SweepOptions{}); err != nil || len(res.Resent) != 1 {
		t.Fatalf("sweep after DeadLetterRetention = %+v, %v", res, err)
	}
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(&stepRunner{})), map[string]string{e.arn: e.url}, runDone(t, e.w, "dead"))
}

// The DLQ runbook: once the bug is fixed, Redrive sends the dead-lettered
// deliveries back to their queues; messages whose delivery is done are
// dropped, foreign messages stay.
func TestRedriveFromDeadLetterQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	dlq, _ := testenv.CreateQueue(t, e.sqs, testenv.UniqueName(t, "dlq"), false)
	startRun(t, e.w, "dl")
	// Move the run's message to the dead-letter queue, as max_receive_count would.
	batch := receiveBatch(t, e, 1)
	deleteBatch(t, e, batch)
	for _, body := range []string{batch.Records[0].Body, `{"id":"long-gone"}`, `not a delivery`} {
		if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.w.Redrive(ctx, dlq, awsworld.RedriveOptions{VisibilityTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Moved) != 1 || res.Dropped != 1 || res.Skipped != 1 {
		t.Fatalf("redrive = %+v, want 1 moved, 1 dropped, 1 skipped", res)
	}
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(&stepRunner{})), map[string]string{e.arn: e.url}, runDone(t, e.w, "dl"))
}

// failRunner fails every delivery of flows.A.
type failRunner struct{}

func (failRunner) Workflows() []string { return []string{"flows.A"} }
func (failRunner) Run(context.Context, worlds.World, worlds.Delivery) error {
	return errors.New("bug")
}

// panicky panics on the deliveries of one run.
type panicky struct {
	stepRunner
	runID string
}

func (p *panicky) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	if d.Input.RunID == p.runID {
		panic("runner bug")
	}
	return p.stepRunner.Run(ctx, w, d)
}

// A runner's panic fails only its own message: the batch's other message is
// delivered, and the panicking delivery's record is released for its retry.
func TestPanicFailsOnlyItsMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, id := range []string{"boom", "fine"} {
		mustAppend(t, e.w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
		if _, err := e.w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: id}, worlds.QueueOptions{ID: "start-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	batch := receiveBatch(t, e, 2)
	resp, err := awsworld.Queue(e.w, &panicky{runID: "boom"})(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %+v, want the panicking message only", resp.BatchItemFailures)
	}
	for _, r := range batch.Records {
		if r.MessageId == resp.BatchItemFailures[0].ItemIdentifier && r.Body != `{"id":"start-boom"}` {
			t.Fatalf("failed message %s, want start-boom's", r.Body)
		}
	}
	if run, _ := e.w.GetRun(ctx, "fine"); run.Status != worlds.RunRunning {
		t.Fatalf("the other run is %s, want running", run.Status)
	}
	rec := queueRecord(t, e, "start-boom")
	if rec == nil || rec["claim"] != nil {
		t.Fatalf("panicked record %v: want it kept and released", rec)
	}
}

// RetryLater fails its step once, with a retry an hour later: beyond SQS's
// delay, through Scheduler.
type RetryLater struct{}

func (RetryLater) Run(ctx workflow.Context, _ int) (int, error) {
	return workflow.Step(ctx, "flaky", func(context.Context, int) (int, error) { return 0, errors.New("not yet") }, 0,
		workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Hour, MaxInterval: time.Hour}))
}

// Cancelling a run deletes its pending schedules: a sleep's wake-up and a step
// retry beyond 15 minutes.
func TestCancelDeletesPendingSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client, err := workflow.NewClient(workflow.Config{World: e.w, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	handler := awsworld.Queue(e.w, client.Runner(worlds.Runners(workflow.Use(Nap{}), workflow.Use(RetryLater{}))))
	queues := map[string]string{e.arn: e.url}
	nap, err := workflow.Start(ctx, client, Nap{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := workflow.Start(ctx, client, RetryLater{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, e, handler, queues, func() bool { return len(e.sched.Schedules()) == 2 })
	for _, id := range []string{nap.ID(), retry.ID()} {
		if err := client.Cancel(ctx, id, "no longer needed"); err != nil {
			t.Fatal(err)
		}
	}
	// The cancel's delivery hands the cancellation to each run's code, which
	// ends it; the ended run's pending deliveries go with it.
	drain(t, e, handler, queues, func() bool {
		for _, id := range []string{nap.ID(), retry.ID()} {
			if r, err := e.w.GetRun(ctx, id); err != nil || r.Status != worlds.RunCancelled {
				return false
			}
		}
		return true
	})
	if s := e.sched.Schedules(); len(s) != 0 {
		t.Fatalf("schedules left after cancel: %+v", s)
	}
	// Nothing runs when the hour has passed.
	e.advance(t, 2*time.Hour+time.Minute)
	if d := e.sched.Delivered(); len(d) != 0 {
		t.Fatalf("cancelled schedules fired: %+v", d)
	}
}

// receiveBatch receives n messages from e's queue as one Lambda batch.
func receiveBatch(t *testing.T, e *env, n int) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	waitFor(t, fmt.Sprintf("%d messages", n), func() bool {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.url), MaxNumberOfMessages: int32(n - len(ev.Records)), WaitTimeSeconds: 1, VisibilityTimeout: 300,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: m.Attributes, EventSourceARN: e.arn, EventSource: "aws:sqs",
			})
		}
		return len(ev.Records) >= n
	})
	return ev
}

func deleteBatch(t *testing.T, e *env, ev events.SQSEvent) {
	t.Helper()
	for _, r := range ev.Records {
		if _, err := e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.url), ReceiptHandle: aws.String(r.ReceiptHandle)}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond for up to 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A retention beyond SQS's 15 minutes goes through Scheduler: the expiry is a
// schedule, and the run is deleted once it fires.
func TestLongRetentionThroughScheduler(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Retention = 2 * time.Hour })
	ctx := context.Background()
	mustAppend(t, e.w, "kept", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunStarted})
	mustAppend(t, e.w, "kept", worlds.Event{Type: worlds.EventRunCompleted})
	s := e.sched.Schedules()
	if len(s) != 1 || s[0].Name != awsworld.SchedulePrefix+awsworld.ExpireID("kept") {
		t.Fatalf("schedules %+v, want the run's expiry", s)
	}
	e.advance(t, time.Hour)
	if _, err := e.w.GetRun(ctx, "kept"); err != nil {
		t.Fatalf("run gone before its retention: %v", err)
	}
	e.advance(t, time.Hour+time.Minute)
	drain(t, e, awsworld.Queue(e.w, nil), map[string]string{e.arn: e.url}, func() bool {
		_, err := e.w.GetRun(ctx, "kept")
		return errors.Is(err, worlds.ErrRunNotFound)
	})
}

// A cancel whose expiry cannot be sent (an API role without the grant, SQS
// down) still succeeds once the cancel and the expiry's record are written;
// Sweep sends the expiry when it is overdue and the run expires.
func TestFinishedRunWhoseExpiryIsNotSentSucceedsAndSweepExpiresIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Retention = time.Second })
	ctx := context.Background()
	crashed, err := awsworld.New(e.cfg, e.db, crashingSQS{e.sqs})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, e.w, "cx", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunStarted})
	if _, err := crashed.Append(ctx, "cx", worlds.Event{Type: worlds.EventRunCancelled, Reason: "stop"}); err != nil {
		t.Fatalf("cancel whose expiry was not sent: %v", err)
	}
	if queueRecord(t, e, awsworld.ExpireID("cx")) == nil {
		t.Fatal("no expiry record")
	}
	e.clock.Advance(awsworld.DefaultLease + 5*time.Second)
	waitFor(t, "the sweep to send the expiry", func() bool {
		res, err := e.w.Sweep(ctx, awsworld.SweepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Resent) == 1
	})
	drain(t, e, awsworld.Queue(e.w, nil), map[string]string{e.arn: e.url}, func() bool {
		_, err := e.w.GetRun(ctx, "cx")
		return errors.Is(err, worlds.ErrRunNotFound)
	})
}
