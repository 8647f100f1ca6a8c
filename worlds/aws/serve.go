package awsworld

import (
	"context"
	"path"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/worlds"
)

// ServePollers is how many receive loops [World.Serve] runs per queue; each
// hands one batch at a time to the Queue handler.
const ServePollers = 4

var _ worlds.Server = (*World)(nil)

// Serve runs deliveries with runner outside Lambda, in a container, a process
// of your own or a test, until ctx ends: it long-polls every configured queue,
// hands each batch to the same handler [Queue] returns, and deletes the messages
// the handler did not report failed, as an SQS event source mapping with
// ReportBatchItemFailures does. It implements [worlds.Server], so
// workflow.Client.Serve works on this World. The SQS client must implement
// [ReceiverAPI]. Scheduler still delivers long delays to the queues.
//
// Serve returns ctx's error once every poller has stopped; a delivery cut short
// by ctx is not acknowledged and is received again after its visibility timeout.
func (w *World) Serve(ctx context.Context, runner worlds.Runner) error {
	rc, err := w.receiver()
	if err != nil {
		return err
	}
	if runner == nil {
		runner = worlds.Runners()
	}
	h := newHandler(w, runner)
	var wg sync.WaitGroup
	for _, q := range w.queues {
		arn := q.ARN
		if arn == "" {
			// The handler finds the queue by the name in an ARN.
			arn = "arn:aws:sqs:local:000000000000:" + path.Base(q.URL)
		}
		for range ServePollers {
			wg.Go(func() { w.poll(ctx, rc, h, q.URL, arn) })
		}
	}
	wg.Wait()
	return ctx.Err()
}

func (w *World) poll(ctx context.Context, rc ReceiverAPI, h *handler, url, arn string) {
	for ctx.Err() == nil {
		out, err := rc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() == nil {
				w.log.WarnContext(ctx, "awsworld: receive", "queue", url, "err", err)
				_ = sleepCtx(ctx, MinRetryDelay)
			}
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
		for i, m := range out.Messages {
			ev.Records[i] = events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: m.Attributes, EventSourceARN: arn, EventSource: "aws:sqs",
			}
		}
		resp, _ := h.handle(ctx, ev) // never fails as a whole
		failed := make(map[string]bool, len(resp.BatchItemFailures))
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if failed[aws.ToString(m.MessageId)] {
				continue
			}
			if _, err := rc.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				w.log.WarnContext(ctx, "awsworld: delete message; it is received again", "messageId", aws.ToString(m.MessageId), "err", err)
			}
		}
	}
}
