package awsworld

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
)

// SchedulePrefix starts the name of every schedule the World creates; the IAM
// policy grants scheduler actions on schedule/<group>/go-workflow-*.
const SchedulePrefix = "go-workflow-"

// ExpireID returns the fixed delivery ID of a run's expiry.
func ExpireID(runID string) string { return "expire-" + runID }

// message is the SQS body: the delivery ID, and for scheduled messages a unique
// publish field so content-based deduplication of FIFO queues never drops them.
type message struct {
	ID      string `json:"id"`
	Publish string `json:"publish,omitempty"`
}

// record is the QUEUE#<id> item.
type record struct {
	ID    string
	Input worlds.QueueInput
	DueAt time.Time
	Queue string
	due   string // the stored due_at, for the delete condition
}

var scheduleSafe = regexp.MustCompile(`^[0-9A-Za-z_.-]{1,` + fmt.Sprint(64-len(SchedulePrefix)) + `}$`)

// maxIDLength bounds delivery IDs, which are part of a DynamoDB key.
const maxIDLength = 1024

// scheduleName is go-workflow-<id>, or go-workflow-<hash of id> when the ID does
// not fit Scheduler's 64 characters of [0-9A-Za-z_.-].
func scheduleName(id string) string {
	if scheduleSafe.MatchString(id) {
		return SchedulePrefix + id
	}
	sum := sha256.Sum256([]byte(id))
	return SchedulePrefix + hex.EncodeToString(sum[:])[:64-len(SchedulePrefix)]
}

func (w *World) queueFor(workflow string) queueRef {
	if name, ok := w.cfg.Routes.Queue(workflow); ok {
		return w.queues[name]
	}
	return w.queues[defaultQueue]
}

// Queue writes a QUEUE#<id> record holding the delivery and publishes the ID to
// the workflow's queue: SendMessage with DelaySeconds when due within 15 minutes,
// otherwise a one-time Scheduler schedule go-workflow-<id>.
func (w *World) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	if err := in.Validate(); err != nil {
		return "", err
	}
	id := opts.ID
	if id == "" {
		id = w.newID()
	}
	if len(id) > maxIDLength {
		return "", &worlds.ArgumentError{Field: "QueueOptions.ID", Value: id[:64] + "...", Reason: fmt.Sprintf("longer than %d bytes", maxIDLength)}
	}
	now := w.now()
	due := opts.DueAt
	if due.IsZero() || due.Before(now) {
		due = now
	}
	q := w.queueFor(in.WorkflowName)
	if due.Sub(now) > MaxSQSDelay && w.cfg.Scheduler == nil {
		return "", &worlds.ArgumentError{Field: "QueueOptions.DueAt", Value: due.Format(time.RFC3339), Reason: "more than 15 minutes ahead needs Config.Scheduler"}
	}
	body, err := worlds.MarshalQueueInput(in)
	if err != nil {
		return "", err
	}
	item := key(queuePK(id), metaSK)
	item[attrData] = s(string(body))
	item[attrDue] = s(due.UTC().Format(time.RFC3339Nano))
	item[attrQueue] = s(q.name)
	if _, err := w.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: w.table, Item: item}); err != nil {
		return "", fmt.Errorf("awsworld: queue record %s: %w", id, err)
	}
	if err := w.publish(ctx, id, q, in.RunID, due); err != nil {
		return "", err
	}
	return id, nil
}

func (w *World) loadRecord(ctx context.Context, id string) (*record, error) {
	item, err := w.getItem(ctx, queuePK(id), metaSK)
	if err != nil || item == nil {
		return nil, err
	}
	in, err := worlds.UnmarshalQueueInput([]byte(getS(item, attrData)))
	if err != nil {
		return nil, fmt.Errorf("awsworld: queue record %s: %w", id, err)
	}
	due, err := time.Parse(time.RFC3339Nano, getS(item, attrDue))
	if err != nil {
		return nil, fmt.Errorf("awsworld: queue record %s: due_at: %w", id, err)
	}
	return &record{ID: id, Input: in, DueAt: due, Queue: getS(item, attrQueue), due: getS(item, attrDue)}, nil
}

// deleteRecord removes a delivered record unless a later Queue call with the same
// ID re-armed it for another time.
func (w *World) deleteRecord(ctx context.Context, r *record) error {
	_, err := w.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: w.table, Key: key(queuePK(r.ID), metaSK),
		ConditionExpression:       aws.String("#d = :d"),
		ExpressionAttributeNames:  map[string]string{"#d": attrDue},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": s(r.due)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("awsworld: delete queue record %s: %w", r.ID, err)
	}
	return nil
}

// publish sends the delivery ID to q, now or after the delay until due.
func (w *World) publish(ctx context.Context, id string, q queueRef, runID string, due time.Time) error {
	delay := due.Sub(w.now())
	if delay < 0 {
		delay = 0
	}
	if delay > MaxSQSDelay || (q.FIFO && delay > 0) {
		return w.schedule(ctx, id, q, runID, due)
	}
	body, _ := json.Marshal(message{ID: id})
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(body))}
	if q.FIFO {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(runID), aws.String(id)
	} else {
		in.DelaySeconds = int32(min(math.Ceil(delay.Seconds()), MaxSQSDelay.Seconds()))
	}
	if _, err := w.sqs.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("awsworld: send delivery %s: %w", id, err)
	}
	return nil
}

func (w *World) schedule(ctx context.Context, id string, q queueRef, runID string, due time.Time) error {
	sc := w.cfg.Scheduler
	if sc == nil {
		return &worlds.ArgumentError{Field: "QueueOptions.DueAt", Value: due.Format(time.RFC3339), Reason: "a delayed FIFO delivery or one more than 15 minutes ahead needs Config.Scheduler"}
	}
	group := sc.Group
	if group == "" {
		group = "default"
	}
	body, _ := json.Marshal(message{ID: id, Publish: w.newID()})
	target := &schedtypes.Target{Arn: aws.String(q.ARN), RoleArn: aws.String(sc.RoleARN), Input: aws.String(string(body))}
	if q.FIFO {
		target.SqsParameters = &schedtypes.SqsParameters{MessageGroupId: aws.String(runID)}
	}
	// at() has one-second resolution; rounding up never delivers early.
	at := due.UTC().Add(time.Second - 1).Truncate(time.Second)
	in := &scheduler.CreateScheduleInput{
		Name:                       aws.String(scheduleName(id)),
		GroupName:                  aws.String(group),
		ScheduleExpression:         aws.String("at(" + at.Format("2006-01-02T15:04:05") + ")"),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      schedtypes.ActionAfterCompletionDelete,
		Target:                     target,
	}
	_, err := sc.Client.CreateSchedule(ctx, in)
	var conflict *schedtypes.ConflictException
	if errors.As(err, &conflict) {
		// A delivery queued again under its ID: replace the earlier schedule.
		_, derr := sc.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: in.Name, GroupName: in.GroupName})
		var nf *schedtypes.ResourceNotFoundException
		if derr != nil && !errors.As(derr, &nf) {
			return fmt.Errorf("awsworld: replace schedule %s: %w", *in.Name, derr)
		}
		_, err = sc.Client.CreateSchedule(ctx, in)
	}
	if err != nil {
		return fmt.Errorf("awsworld: schedule delivery %s: %w", id, err)
	}
	return nil
}
