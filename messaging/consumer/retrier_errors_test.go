package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/router"
)

// A retry or dead letter that could not be made is reported with the
// loafer-awsx sentinel for that step, still wrapping the AWS error.
func TestRetrierFailureSentinels(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	_, arn := fake.AddQueue("sentinels.fifo")
	dlq, _ := fake.AddQueue("sentinels-dlq.fifo")
	sched := messagingtest.NewScheduler(fake)
	cause := errors.New("throttled")
	sched.Err = cause
	r := &consumer.Retrier{
		Config: router.ScheduledRetryConfig{
			TargetQueueARN: arn, ExecutionRoleARN: "arn:aws:iam::000000000000:role/sched",
			DLQQueueURL: dlq, MaxRetryCount: 3, BaseBackoff: time.Second, MaxBackoff: time.Second,
		},
		Scheduler: sched,
		SQS:       failingSend{SQS: fake, dlq: dlq},
	}

	msg := func() *types.Message {
		return &types.Message{MessageId: aws.String("m1"), Body: aws.String("b"), ReceiptHandle: aws.String("r"),
			Attributes: map[string]string{"MessageGroupId": "g"}}
	}
	tests := []struct {
		name  string
		class merrors.Class
		want  error
		cause bool
	}{
		{"schedule", merrors.Retry, merrors.ErrRetryScheduleCreate, true},
		{"dead letter", merrors.FatalClass, merrors.ErrDLQPublish, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := r.Fail(context.Background(), msg(), tt.class, 0)
			if out.Decision != consumer.Keep || !errors.Is(out.Err, tt.want) {
				t.Fatalf("Fail = %+v; want Keep with %v", out, tt.want)
			}
			if tt.cause && !errors.Is(out.Err, cause) {
				t.Fatalf("%v lost the AWS error", out.Err)
			}
		})
	}
}
