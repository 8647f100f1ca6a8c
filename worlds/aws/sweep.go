package awsworld

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// scheduleGrace is how much longer Sweep waits for a delivery due through
// Scheduler than for one sent to SQS.
const scheduleGrace = 5 * time.Minute

// SweepOptions tune one [World.Sweep].
type SweepOptions struct {
	// DryRun finds orphaned deliveries without sending them.
	DryRun bool
	// Limit bounds how many deliveries one sweep sends again; zero means no bound.
	Limit int
}

// SweepResult reports one sweep.
type SweepResult struct {
	// Overdue counts the queue records examined: due more than Config.Lease ago.
	Overdue int `json:"overdue"`
	// Resent lists the delivery IDs sent again (with DryRun: that would be).
	Resent []string `json:"resent"`
	// Waiting counts overdue records left alone: held by a receiver, or received
	// before and waiting for their message's retry or dead-letter queue.
	Waiting int `json:"waiting"`
}

// Sweep returns a handler for a Scheduler cron (for example rate(5 minutes))
// invoking a Lambda function with lambda.Start(awsworld.Sweep(world)). Each
// invocation runs [World.Sweep] with default options; its input is ignored.
func Sweep(w *World) func(context.Context) (SweepResult, error) {
	return func(ctx context.Context) (SweepResult, error) { return w.Sweep(ctx, SweepOptions{}) }
}

// Sweep finds queue records whose SQS message is gone and sends them again, so
// no run waits forever on a delivery that will never arrive:
//
//   - a record never received, due more than Config.Lease ago (five minutes
//     more for one due through Scheduler): the process that wrote it died
//     before sending its message or creating its schedule;
//   - a record received before, last let go by a receiver more than
//     Config.DeadLetterRetention ago: its message was dropped from the
//     dead-letter queue, or deleted while the record's own delete failed.
//
// A record a receiver holds under a live lease is never touched. Sending again
// conditionally re-stamps the record first, so concurrent sweeps send it once.
// Index membership is eventually consistent: a sweep sees records written at
// least a moment ago, which overdue records always are.
func (w *World) Sweep(ctx context.Context, opts SweepOptions) (SweepResult, error) {
	res := SweepResult{Resent: []string{}}
	now := w.now()
	q := indexQuery{index: indexList, pkAttr: attrListPK, skAttr: attrListSK, before: sortTime(now.Add(-w.cfg.Lease)) + "#"}
	pks, err := w.shardPKs(ctx, queueShardPK)
	if err != nil {
		return res, err
	}
	var keys []map[string]types.AttributeValue
	for _, pk := range pks {
		q.pk = pk
		k, err := w.queryIndex(ctx, q, 1<<30)
		if err != nil {
			return res, err
		}
		keys = append(keys, k...)
	}
	items, err := w.fetch(ctx, keys)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, item := range items {
		id := getS(item, attrPK)[len("QUEUE#"):]
		rec, err := decodeRecord(id, item)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.Overdue++
		if !w.orphaned(rec, now) {
			res.Waiting++
			continue
		}
		if opts.Limit > 0 && len(res.Resent) >= opts.Limit {
			break
		}
		if opts.DryRun {
			res.Resent = append(res.Resent, id)
			continue
		}
		sent, err := w.resend(ctx, rec, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sent {
			w.log.InfoContext(ctx, "awsworld: orphaned delivery sent again", "id", id, "runId", rec.Input.RunID, "dueAt", rec.DueAt, "attempts", rec.attempts)
			res.Resent = append(res.Resent, id)
		}
	}
	if len(res.Resent) > 0 || len(errs) > 0 {
		w.log.InfoContext(ctx, "awsworld: sweep", "overdue", res.Overdue, "resent", len(res.Resent), "waiting", res.Waiting, "errors", len(errs))
	}
	return res, errors.Join(errs...)
}

// orphaned reports whether rec's message is presumed gone at now.
func (w *World) orphaned(rec *record, now time.Time) bool {
	if rec.claim != "" && rec.lease > now.UnixMilli() {
		return false // a receiver is executing it
	}
	last := max(rec.DueAt.UnixMilli(), rec.published, rec.lease)
	wait := w.cfg.Lease
	if rec.scheduled {
		// Scheduler fires within a minute or so of the due time, not at once.
		wait += scheduleGrace
	}
	if rec.lease > 0 {
		// Received since it was last queued (a receive leaves a lease time, a
		// Queue call removes it but keeps the attempt count): its message may be
		// waiting out a failure backoff, or sit in the dead-letter queue for
		// `cairn redrive`.
		wait = w.cfg.DeadLetterRetention
	}
	return now.UnixMilli()-last > wait.Milliseconds()
}

// resend re-stamps rec as published at now, unless it changed or was claimed
// since it was read, and sends its message again.
func (w *World) resend(ctx context.Context, rec *record, now time.Time) (bool, error) {
	_, err := w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: w.table, Key: key(queuePK(rec.ID), metaSK),
		UpdateExpression:         aws.String("SET #p = :now"),
		ConditionExpression:      aws.String("#d = :d AND (attribute_not_exists(#p) OR #p = :p) AND (attribute_not_exists(#c) OR #l < :nowms)"),
		ExpressionAttributeNames: map[string]string{"#d": attrDue, "#p": attrPublished, "#c": attrClaim, "#l": attrLease},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": s(rec.due), ":p": n(rec.published), ":now": n(now.UnixMilli()), ":nowms": n(now.UnixMilli()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// Sent again by the SDK after a lost answer, the update finds the
		// record it re-stamped itself: the message is still this sweep's to
		// send. Changed or claimed since, it is not.
		old := ccf.Item
		if getS(old, attrDue) != rec.due || getN(old, attrPublished) != now.UnixMilli() ||
			(getS(old, attrClaim) != "" && getN(old, attrLease) >= now.UnixMilli()) {
			return false, nil
		}
	} else if err != nil {
		return false, fmt.Errorf("awsworld: sweep queue record %s: %w", rec.ID, err)
	}
	return true, w.publish(ctx, rec.ID, w.recordQueue(rec), rec.Input.RunID, rec.DueAt)
}

// recordQueue is the queue a record was written for.
func (w *World) recordQueue(rec *record) queueRef {
	if q, ok := w.queues[rec.Queue]; ok {
		return q
	}
	return w.queueFor(rec.Input.WorkflowName)
}

// ReceiverAPI is the part of the SQS client [World.Serve] and [World.Redrive]
// need beyond [SQSAPI]; *sqs.Client has it. New accepts a client without it, and
// those methods then fail with a *[ConfigError].
type ReceiverAPI interface {
	SQSAPI
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

func (w *World) receiver() (ReceiverAPI, error) {
	r, ok := w.sqs.(ReceiverAPI)
	if !ok {
		return nil, &ConfigError{Field: "sqsClient", Value: fmt.Sprintf("%T", w.sqs), Reason: "does not implement awsworld.ReceiverAPI (ReceiveMessage, DeleteMessage)"}
	}
	return r, nil
}

// RedriveOptions tune one [World.Redrive].
type RedriveOptions struct {
	// Max bounds how many messages are moved; zero moves until the dead-letter
	// queue is empty.
	Max int
	// VisibilityTimeout hides each received message from other readers while it
	// is moved; zero uses 60 seconds. A message that is not a delivery stays in
	// the dead-letter queue and reappears after it.
	VisibilityTimeout time.Duration
}

// RedriveResult reports one redrive.
type RedriveResult struct {
	// Moved lists the delivery IDs sent again to their queues.
	Moved []string `json:"moved"`
	// Dropped counts messages deleted because their delivery is done: its record
	// is gone (delivered, or expired with its run).
	Dropped int `json:"dropped"`
	// Skipped counts messages left in place: not a delivery of this World.
	Skipped int `json:"skipped"`
}

// Redrive moves deliveries from a dead-letter queue back to the queues their
// records name, after the cause of their failures is fixed: for each message it
// sends the delivery again (due now, or at its due time if later) and then
// deletes the message from deadLetterURL. It stops when a receive finds the
// queue empty or after opts.Max messages. Redriving twice is safe: the runtime
// is idempotent and a delivery already done has no record.
func (w *World) Redrive(ctx context.Context, deadLetterURL string, opts RedriveOptions) (RedriveResult, error) {
	res := RedriveResult{Moved: []string{}}
	if deadLetterURL == "" {
		return res, &ConfigError{Field: "deadLetterURL", Value: deadLetterURL, Reason: "required"}
	}
	rc, err := w.receiver()
	if err != nil {
		return res, err
	}
	vis := opts.VisibilityTimeout
	if vis <= 0 {
		vis = time.Minute
	}
	for opts.Max <= 0 || len(res.Moved)+res.Dropped < opts.Max {
		batch := int32(10)
		if opts.Max > 0 {
			batch = int32(min(10, opts.Max-len(res.Moved)-res.Dropped))
		}
		out, err := rc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(deadLetterURL), MaxNumberOfMessages: batch, WaitTimeSeconds: 1,
			VisibilityTimeout: int32(vis / time.Second),
		})
		if err != nil {
			return res, fmt.Errorf("awsworld: redrive: receive from %s: %w", deadLetterURL, err)
		}
		if len(out.Messages) == 0 {
			return res, nil
		}
		for _, m := range out.Messages {
			moved, err := w.redriveOne(ctx, m)
			if err != nil {
				return res, err
			}
			switch {
			case moved == "":
				res.Skipped++
				continue
			case moved == "-":
				res.Dropped++
			default:
				res.Moved = append(res.Moved, moved)
			}
			if _, err := rc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(deadLetterURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return res, fmt.Errorf("awsworld: redrive: delete from %s: %w", deadLetterURL, err)
			}
		}
	}
	return res, nil
}

// redriveOne sends the delivery of dead-lettered message m again. It returns its
// ID, "-" when the delivery is done, or "" for a message that is not a delivery.
func (w *World) redriveOne(ctx context.Context, m sqstypes.Message) (string, error) {
	var msg message
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &msg); err != nil || msg.ID == "" {
		return "", nil
	}
	item, err := w.getItem(ctx, queuePK(msg.ID), metaSK)
	if err != nil {
		return "", err
	}
	if item == nil {
		return "-", nil
	}
	rec, err := decodeRecord(msg.ID, item)
	if err != nil {
		return "", nil
	}
	// publish sends a delivery due in the past at once.
	if err := w.publish(ctx, rec.ID, w.recordQueue(rec), rec.Input.RunID, rec.DueAt); err != nil {
		return "", err
	}
	w.log.InfoContext(ctx, "awsworld: dead-lettered delivery sent again", "id", rec.ID, "runId", rec.Input.RunID, "attempts", rec.attempts)
	return rec.ID, nil
}
