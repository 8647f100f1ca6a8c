package awsworld_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/worldtest"
)

const conformanceRetention = 2 * time.Second

func TestConformance(t *testing.T) {
	var envs sync.Map // *awsworld.World -> *env
	worldtest.Run(t, func(t *testing.T) worlds.World {
		e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Retention = conformanceRetention })
		envs.Store(e.w, e)
		return e.w
	}, worldtest.WithRetention(conformanceRetention), worldtest.WithDriver(func(ctx context.Context, w worlds.World, r worlds.Runner) error {
		v, ok := envs.Load(w)
		if !ok {
			return errors.New("driver: unknown World")
		}
		return v.(*env).drive(ctx, r)
	}))
}

// drive is the event source mapping: it runs due schedules, receives batches from
// the queue and hands them to the Lambda handler until ctx ends.
func (e *env) drive(ctx context.Context, r worlds.Runner) error {
	handler := awsworld.Queue(e.w, r)
	for ctx.Err() == nil {
		if err := e.sched.RunDue(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if len(out.Messages) == 0 {
			continue
		}
		var ev events.SQSEvent
		for _, m := range out.Messages {
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: m.Attributes, EventSourceARN: e.arn, EventSource: "aws:sqs",
			})
		}
		hctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		resp, err := handler(hctx, ev)
		cancel()
		if err != nil {
			return err
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				_, _ = e.sqs.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.url), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
	return ctx.Err()
}
