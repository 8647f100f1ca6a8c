package awsworld_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// countingRunner counts the deliveries of flows.A it runs; block, when set, holds
// each one until it is closed.
type countingRunner struct {
	ran     atomic.Int64
	started chan string
	block   chan struct{}
}

func (*countingRunner) Workflows() []string { return []string{"flows.A"} }
func (r *countingRunner) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	r.ran.Add(1)
	if r.block != nil {
		r.started <- d.ID
		<-r.block
	}
	return nil
}

func scheduleNames(e *env) []string {
	var names []string
	for _, sc := range e.sched.Schedules() {
		names = append(names, sc.Name)
	}
	slices.Sort(names)
	return names
}

// A cancelled timer's wake-up an hour ahead loses its QUEUE record and its
// Scheduler schedule; one due within 15 minutes, already sent to SQS with a
// delay, loses its record, and its message is acknowledged without running.
func TestCancelDeliveryDeletesRecordAndSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "timer"}
	queue := func(id string, due time.Time) {
		t.Helper()
		if _, err := e.w.Queue(ctx, in, worlds.QueueOptions{ID: id, DueAt: due}); err != nil {
			t.Fatal(err)
		}
	}
	cancel := func(id string) {
		t.Helper()
		if err := e.w.CancelDelivery(ctx, id); err != nil {
			t.Fatalf("CancelDelivery(%s): %v", id, err)
		}
	}
	queue("wake-x", e.clock.Now().Add(time.Hour))
	queue("other", e.clock.Now().Add(2*time.Hour))
	if got := scheduleNames(e); !slices.Equal(got, []string{awsworld.SchedulePrefix + "other", awsworld.SchedulePrefix + "wake-x"}) {
		t.Fatalf("schedules before the cancel: %v", got)
	}
	cancel("wake-x")
	if queueRecord(t, e, "wake-x") != nil {
		t.Error("QUEUE#wake-x still stored after CancelDelivery")
	}
	if queueRecord(t, e, "other") == nil {
		t.Error("QUEUE#other deleted by the cancel of wake-x")
	}
	if got := scheduleNames(e); !slices.Equal(got, []string{awsworld.SchedulePrefix + "other"}) {
		t.Errorf("schedules after the cancel: %v, want only other's", got)
	}
	cancel("wake-x")
	cancel("never-queued")

	// Due in a second: a delayed SQS message, no schedule.
	queue("wake-soon", e.clock.Now().Add(time.Second))
	if n := len(e.sched.Schedules()); n != 1 {
		t.Fatalf("%d schedules, want 1: a delivery due within 15 minutes has none", n)
	}
	cancel("wake-soon")
	if queueRecord(t, e, "wake-soon") != nil {
		t.Error("QUEUE#wake-soon still stored after CancelDelivery")
	}
	r := &countingRunner{}
	deadline := time.Now().Add(3 * time.Second) // past the message's delay
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(r)), map[string]string{e.arn: e.url}, func() bool {
		return time.Now().After(deadline) && testenv.QueueLen(t, e.sqs, e.url) == 0
	})
	if n := r.ran.Load(); n != 0 {
		t.Errorf("cancelled deliveries ran %d times", n)
	}
}

// A delivery a handler is executing keeps its record when cancelled; it finishes
// as usual.
func TestCancelDeliveryKeepsAClaimedOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "busy"}
	if _, err := e.w.Queue(ctx, in, worlds.QueueOptions{ID: "busy"}); err != nil {
		t.Fatal(err)
	}
	var msgs []sqstypes.Message
	for deadline := time.Now().Add(10 * time.Second); len(msgs) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no message")
		}
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.url), MaxNumberOfMessages: 1, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		msgs = out.Messages
	}
	m := msgs[0]
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: e.arn, EventSource: "aws:sqs"}}}
	r := &countingRunner{started: make(chan string, 1), block: make(chan struct{})}
	handled := make(chan events.SQSEventResponse, 1)
	go func() {
		resp, _ := awsworld.Queue(e.w, worlds.Runners(r))(ctx, ev)
		handled <- resp
	}()
	select {
	case <-r.started:
	case <-time.After(10 * time.Second):
		close(r.block)
		t.Fatal("the delivery did not start")
	}
	if err := e.w.CancelDelivery(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	if queueRecord(t, e, "busy") == nil {
		t.Error("CancelDelivery deleted the record of a delivery being executed")
	}
	close(r.block)
	if resp := <-handled; len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler failed the delivery: %+v", resp)
	}
	if queueRecord(t, e, "busy") != nil {
		t.Error("the executed delivery's record was not deleted after it ran")
	}
}

// Only a delivery due later has an entry in the run's QUEUE#<runID> partition
// of list_group, which a finishing run queries for what is still due: one due
// now is past due by then, and its entry would cost an index write when it is
// queued and another when it is deleted.
func TestOnlyDeliveriesDueLaterAreIndexedByRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "byrun"}
	indexed := func(id string) bool {
		t.Helper()
		rec := queueRecord(t, e, id)
		if rec == nil {
			t.Fatalf("QUEUE#%s missing", id)
		}
		_, pk := rec["list_group_pk"]
		_, sk := rec["list_group_sk"]
		if pk != sk {
			t.Fatalf("QUEUE#%s has one of list_group_pk and list_group_sk: %v", id, rec)
		}
		if _, ok := rec["list_pk"]; !ok {
			t.Fatalf("QUEUE#%s has no list entry, so Sweep would not find it", id)
		}
		return pk
	}
	for _, tc := range []struct {
		id      string
		due     time.Time
		indexed bool
	}{
		{"now", time.Time{}, false},
		{"later", e.clock.Now().Add(time.Minute), true},
		{"later", time.Time{}, false}, // queued again, due now: its entry goes
	} {
		if _, err := e.w.Queue(ctx, in, worlds.QueueOptions{ID: tc.id, DueAt: tc.due}); err != nil {
			t.Fatal(err)
		}
		if got := indexed(tc.id); got != tc.indexed {
			t.Errorf("QUEUE#%s due %v: in list_group %v, want %v", tc.id, tc.due, got, tc.indexed)
		}
	}
}
