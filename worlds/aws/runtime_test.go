package awsworld_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Nap sleeps past SQS's 15-minute limit, so its wake-up goes through Scheduler.
type Nap struct{}

func (Nap) Run(ctx workflow.Context, in int) (int, error) {
	if err := workflow.Sleep(ctx, 2*time.Hour); err != nil {
		return 0, err
	}
	return workflow.Step(ctx, "double", func(_ context.Context, v int) (int, error) { return 2 * v, nil }, in)
}

// The workflow runtime on this World, driven through the Lambda handler with real
// SQS batches: a chain of steps, and a two-hour sleep woken by the Scheduler fake.
func TestWorkflowRuntimeEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client, err := workflow.NewClient(workflow.Config{World: e.w, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.FlushCache) // the run cache's parked executions end with the test
	ctx := context.Background()
	// client.Runner gives the runners the client's clock.
	handler := awsworld.Queue(e.w, client.Runner(worlds.Runners(workflow.Use(Chain{}), workflow.Use(Nap{}))))
	queues := map[string]string{e.arn: e.url}

	chain, err := workflow.Start(ctx, client, Chain{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, e, handler, queues, runDone(t, e.w, chain.ID()))
	if out, err := chain.Result(ctx); err != nil || out != 10+benchSteps {
		t.Fatalf("chain = %d, %v", out, err)
	}

	nap, err := workflow.Start(ctx, client, Nap{}, 21)
	if err != nil {
		t.Fatal(err)
	}
	// Run until the sleep is recorded and its wake-up scheduled.
	drain(t, e, handler, queues, func() bool { return len(e.sched.Schedules()) == 1 })
	if r, _ := e.w.GetRun(ctx, nap.ID()); r.Status != worlds.RunRunning {
		t.Fatalf("napping run is %s", r.Status)
	}
	e.advance(t, 2*time.Hour+time.Minute)
	drain(t, e, handler, queues, runDone(t, e.w, nap.ID()))
	if out, err := nap.Result(ctx); err != nil || out != 42 {
		t.Fatalf("nap = %d, %v", out, err)
	}
}

// Scheduler delivers at least once: a schedule may fire twice, and the second
// copy may arrive while the woken run is already past its sleep, or after it
// finished. The wait completes once, the step after it runs once, and the spare
// copy is acknowledged.
func TestSchedulerFiringTwiceWakesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	client, err := workflow.NewClient(workflow.Config{World: e.w, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.FlushCache) // the run cache's parked executions end with the test
	ctx := context.Background()
	handler := awsworld.Queue(e.w, client.Runner(workflow.Use(Nap{})))
	queues := map[string]string{e.arn: e.url}
	nap, err := workflow.Start(ctx, client, Nap{}, 21)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, e, handler, queues, func() bool { return len(e.sched.Schedules()) == 1 })
	e.advance(t, 2*time.Hour+time.Minute) // fires once...
	fired := e.sched.Delivered()
	if len(fired) != 1 {
		t.Fatalf("%d schedules fired, want 1", len(fired))
	}
	for range 2 { // ...and twice more, as an at-least-once Scheduler may
		if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.url), MessageBody: aws.String(fired[0].Input)}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, e, handler, queues, runDone(t, e.w, nap.ID()))
	if out, err := nap.Result(ctx); err != nil || out != 42 {
		t.Fatalf("nap = %d, %v", out, err)
	}
	// Let the spare copies arrive, then count.
	drain(t, e, handler, queues, func() bool { return queueEmpty(t, e) })
	events, err := worlds.AllEvents(ctx, e.w, nap.ID())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[worlds.EventType]int{}
	for _, ev := range events {
		counts[ev.Type]++
	}
	if counts[worlds.EventWaitCompleted] != 1 || counts[worlds.EventStepStarted] != 1 || counts[worlds.EventStepCompleted] != 1 || counts[worlds.EventRunCompleted] != 1 {
		t.Fatalf("event counts %v: want the wait, the step's one attempt and the run completed once", counts)
	}
}

// queueEmpty reports whether e's queue holds no messages, visible or in flight.
func queueEmpty(t *testing.T, e *env) bool {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] == "0" &&
		out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0"
}
