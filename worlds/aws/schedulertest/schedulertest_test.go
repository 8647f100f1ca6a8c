package schedulertest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds/aws/schedulertest"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// The SDK client against the fake: the wire format is the SDK's own.
func TestScheduleLifecycleDeliversToSQS(t *testing.T) {
	t.Parallel()
	sq := testenv.SQS(t)
	url, arn := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "sched"), false)
	clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	fake := schedulertest.New(sq, clk.Now, func(a string) (string, error) {
		if a == arn {
			return url, nil
		}
		return "", fmt.Errorf("unknown %s", a)
	})
	t.Cleanup(fake.Close)
	client := fake.Client(testenv.AWSConfig(t))
	ctx := context.Background()
	in := &scheduler.CreateScheduleInput{
		Name: aws.String("go-workflow-x"), GroupName: aws.String("g"),
		ScheduleExpression: aws.String("at(2026-03-01T13:00:00)"), ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:    &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
		ActionAfterCompletion: schedtypes.ActionAfterCompletionDelete,
		Target:                &schedtypes.Target{Arn: aws.String(arn), RoleArn: aws.String("arn:aws:iam::0:role/r"), Input: aws.String(`{"id":"x"}`)},
	}
	if _, err := client.CreateSchedule(ctx, in); err != nil {
		t.Fatal(err)
	}
	var conflict *schedtypes.ConflictException
	if _, err := client.CreateSchedule(ctx, in); !errors.As(err, &conflict) {
		t.Fatalf("second create: %v, want ConflictException", err)
	}
	got, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: in.Name, GroupName: in.GroupName})
	if err != nil || aws.ToString(got.ScheduleExpression) != "at(2026-03-01T13:00:00)" || aws.ToString(got.Target.Input) != `{"id":"x"}` {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if err := fake.RunDue(ctx); err != nil || len(fake.Delivered()) != 0 {
		t.Fatalf("delivered before due: %v", err)
	}
	clk.Add(time.Hour)
	if err := fake.RunDue(ctx); err != nil || len(fake.Delivered()) != 1 || len(fake.Schedules()) != 0 {
		t.Fatalf("due schedule: err %v, delivered %d, pending %d", err, len(fake.Delivered()), len(fake.Schedules()))
	}
	out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2})
	if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != `{"id":"x"}` {
		t.Fatalf("queue got %+v, %v", out.Messages, err)
	}
	var nf *schedtypes.ResourceNotFoundException
	if _, err := client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: in.Name, GroupName: in.GroupName}); !errors.As(err, &nf) {
		t.Fatalf("delete after run: %v, want ResourceNotFoundException (ActionAfterCompletion DELETE)", err)
	}
	in.Name = aws.String("go-workflow-y")
	if _, err := client.CreateSchedule(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: in.Name, GroupName: in.GroupName}); err != nil {
		t.Fatal(err)
	}
	if len(fake.Schedules()) != 0 {
		t.Fatal("deleted schedule still pending")
	}
	in.ScheduleExpression = aws.String("rate(5 minutes)")
	var ve *schedtypes.ValidationException
	if _, err := client.CreateSchedule(ctx, in); !errors.As(err, &ve) {
		t.Fatalf("rate expression: %v, want ValidationException", err)
	}
}

// The SDK client keeps idle HTTP connections; the server must be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"))
}
