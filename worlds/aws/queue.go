package awsworld

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
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
	// claim is the token of the handler executing the delivery, and attempts how
	// many handlers have claimed it: SQS may hand one delivery to several
	// receivers (duplicate messages, at-least-once receives), and they run it one
	// at a time.
	claim    string
	attempts int
	// lease is lease_until: while claimed, when the claim ends; after a release,
	// when it was released. published is when the record was last (re)written
	// or sent again by Sweep. Both are Unix milliseconds.
	lease, published int64
	scheduled        bool
}

// leaseHeldError reports a delivery another receiver is executing; its message
// comes back once the lease ends.
type leaseHeldError struct {
	id    string
	until time.Time // wall clock
}

func (e *leaseHeldError) Error() string {
	return fmt.Sprintf("awsworld: delivery %s is being executed by another receiver until %s", e.id, e.until.Format(time.RFC3339Nano))
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
	if err := w.recordShards(ctx); err != nil {
		return "", err
	}
	item := key(queuePK(id), metaSK)
	item[attrData] = s(string(body))
	item[attrDue] = s(due.UTC().Format(time.RFC3339Nano))
	item[attrQueue] = s(q.name)
	item[attrPublished] = n(now.UnixMilli())
	// The list index finds overdue records for Sweep, list_group the
	// deliveries a run still has due later when it finishes. A delivery due now
	// is past due by then, so it gets no list_group entry: one index write less
	// when it is queued and one when it is deleted.
	item[attrListPK] = s(queueShardPK(shardOf(id, w.shards)))
	item[attrListSK] = s(listSK(due, id))
	if due.After(now) {
		item[attrGroupPK] = s(runQueuePK(in.RunID))
		item[attrGroupSK] = s(listSK(due, id))
	}
	if w.scheduled(q, due.Sub(now)) {
		item[attrScheduled] = &types.AttributeValueMemberBOOL{Value: true}
	}
	pending, err := w.writeRecord(ctx, item, !due.After(now))
	if err != nil {
		return "", fmt.Errorf("awsworld: queue record %s: %w", id, err)
	}
	if pending {
		// The same delivery is already on its way, due no later: a second
		// message would only be a duplicate for the worker to turn away.
		w.log.DebugContext(ctx, "awsworld: delivery already queued", "id", id, "runId", in.RunID)
		return id, nil
	}
	if err := w.publish(ctx, id, q, in.RunID, due); err != nil {
		w.markUnsent(ctx, id, now)
		return "", &unsentError{id: id, err: err}
	}
	return id, nil
}

// markUnsent flags a record whose message or schedule failed, so the caller's
// retry under the same ID sends it instead of taking it for a delivery already
// on its way. Best effort: a record left unflagged is still sent by Sweep once
// it is overdue.
func (w *World) markUnsent(ctx context.Context, id string, published time.Time) {
	_, err := w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: w.table, Key: key(queuePK(id), metaSK),
		UpdateExpression:          aws.String("SET #u = :t"),
		ConditionExpression:       aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#u": attrUnsent, "#p": attrPublished},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}, ":p": n(published.UnixMilli())},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		w.log.WarnContext(ctx, "awsworld: cannot flag an unsent delivery (Sweep sends it once overdue)", "id", id, "err", err)
	}
}

// writeRecord writes a QUEUE record's fields, dropping a claim on it, so a
// delivery queued again while it runs runs again, but keeping its count of
// executions: the next execution is still told it is a retry, and re-queues
// what a failed earlier execution may have left unqueued (a step it started
// inline). A PutItem would reset the count, and a run started again after a
// lost answer, which queues its first delivery again, could then end up
// waiting for ever on a step nobody runs.
//
// It writes nothing and reports pending when the record already holds the same
// delivery to the same queue, sent (not flagged unsent) and not received since
// it was queued (no claim, no lease), and due at the same time or, for a
// delivery due now, no later: its message or schedule is still on its way, and
// sending another would hand the worker the delivery twice (a retried workflow
// start queues start-<runID> again). A delivery queued again due later than
// before is rewritten, so it runs at the new time.
func (w *World) writeRecord(ctx context.Context, item map[string]types.AttributeValue, dueNow bool) (pending bool, err error) {
	names := map[string]string{"#c": attrClaim, "#l": attrLease, "#u": attrUnsent, "#pk": attrPK,
		"#d": attrData, "#q": attrQueue, "#o": attrListSK}
	values := map[string]types.AttributeValue{":d": item[attrData], ":q": item[attrQueue], ":o": item[attrListSK]}
	var set []string
	fields := make([]string, 0, len(item))
	for k := range item {
		if k != attrPK && k != attrSK {
			fields = append(fields, k)
		}
	}
	slices.Sort(fields)
	for i, k := range fields {
		n, v := fmt.Sprintf("#f%d", i), fmt.Sprintf(":f%d", i)
		names[n], values[v] = k, item[k]
		set = append(set, n+" = "+v)
	}
	// Due now: a pending message due no later is as good. Due later: only
	// the same due time is the same delivery.
	dueCmp := "<> :o"
	if dueNow {
		dueCmp = "> :o"
	}
	remove := []string{"#c", "#l", "#u"}
	if _, ok := item[attrScheduled]; !ok {
		names["#s"] = attrScheduled
		remove = append(remove, "#s")
	}
	if _, ok := item[attrGroupPK]; !ok { // due now: out of list_group, even if it was due later before
		names["#gpk"], names["#gsk"] = attrGroupPK, attrGroupSK
		remove = append(remove, "#gpk", "#gsk")
	}
	_, err = w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: w.table, Key: key(getS(item, attrPK), getS(item, attrSK)),
		UpdateExpression: aws.String("SET " + strings.Join(set, ", ") + " REMOVE " + strings.Join(remove, ", ")),
		// The negation of "the same delivery is pending": list_sk is
		// <due, fixed width>#<id>, so it orders by due time.
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR attribute_exists(#c) OR attribute_exists(#l) OR attribute_exists(#u) OR " +
			"attribute_not_exists(#o) OR #d <> :d OR #q <> :q OR #o " + dueCmp),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// The SDK sends a write again when its answer is lost, and the second
		// sending finds the record the first one wrote. That record's message
		// is not on its way: this call has still to send it.
		return !isRecordAsWritten(ccf.Item, item), nil
	}
	return false, err
}

// isRecordAsWritten reports whether the stored record is item as writeRecord
// wrote it: every field the same (the publish time to the millisecond among
// them) and none of those it removes, its count of executions aside.
func isRecordAsWritten(stored, item map[string]types.AttributeValue) bool {
	for k, v := range stored {
		if k != attrAttempts && !reflect.DeepEqual(v, item[k]) {
			return false
		}
	}
	for k := range item {
		if _, ok := stored[k]; !ok {
			return false
		}
	}
	return true
}

// unsentError reports a delivery whose record is written but whose message or
// schedule is not: queueing it again under its ID, or [World.Sweep] once it is
// overdue, sends it.
type unsentError struct {
	id  string
	err error
}

func (e *unsentError) Error() string {
	return fmt.Sprintf("awsworld: delivery %s recorded but not sent (Sweep sends it once overdue): %v", e.id, e.err)
}

func (e *unsentError) Unwrap() error { return e.err }

// claimRecord loads the QUEUE#<id> record and leases it to one execution until
// wall+lease, counting the attempt. It returns nil without a record, and a
// *leaseHeldError while another execution holds an unexpired lease.
func (w *World) claimRecord(ctx context.Context, id string, wall time.Time) (*record, error) {
	token := w.newID()
	out, err := w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           w.table,
		Key:                                 key(queuePK(id), metaSK),
		UpdateExpression:                    aws.String("SET #c = :c, #l = :l ADD #a :one"),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND (attribute_not_exists(#c) OR #l < :now)"),
		ExpressionAttributeNames:            map[string]string{"#pk": attrPK, "#c": attrClaim, "#l": attrLease, "#a": attrAttempts},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":c": s(token), ":l": n(wall.Add(w.cfg.Lease).UnixMilli()), ":now": n(wall.UnixMilli()), ":one": n(1)},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		old := ccf.Item
		if len(old) == 0 { // an engine that does not return the old item: look
			if old, err = w.getItem(ctx, queuePK(id), metaSK); err != nil {
				return nil, err
			}
		}
		if len(old) == 0 {
			return nil, nil
		}
		if getS(old, attrClaim) == token {
			// The claim committed and the SDK sent it again after losing the
			// answer: the record as stored is this execution's.
			return decodeRecord(id, old)
		}
		return nil, &leaseHeldError{id: id, until: time.UnixMilli(getN(old, attrLease))}
	}
	if err != nil {
		return nil, fmt.Errorf("awsworld: claim queue record %s: %w", id, err)
	}
	return decodeRecord(id, out.Attributes)
}

func decodeRecord(id string, item map[string]types.AttributeValue) (*record, error) {
	in, err := worlds.UnmarshalQueueInput([]byte(getS(item, attrData)))
	if err != nil {
		return nil, fmt.Errorf("awsworld: queue record %s: %w", id, err)
	}
	due, err := time.Parse(time.RFC3339Nano, getS(item, attrDue))
	if err != nil {
		return nil, fmt.Errorf("awsworld: queue record %s: due_at: %w", id, err)
	}
	return &record{ID: id, Input: in, DueAt: due, Queue: getS(item, attrQueue), due: getS(item, attrDue),
		claim: getS(item, attrClaim), attempts: int(getN(item, attrAttempts)),
		lease: getN(item, attrLease), published: getN(item, attrPublished), scheduled: getBool(item, attrScheduled)}, nil
}

// renewLease extends r's lease to wall+Lease while its execution still holds it.
func (w *World) renewLease(ctx context.Context, r *record, wall time.Time) error {
	err := w.updateClaimed(ctx, r, "SET #l = :l", map[string]types.AttributeValue{":l": n(wall.Add(w.cfg.Lease).UnixMilli())})
	if err != nil {
		return fmt.Errorf("awsworld: renew lease of %s: %w", r.ID, err)
	}
	return nil
}

// releaseRecord gives up r's lease after a failed execution, so its retry need
// not wait for the lease to run out. The lease time is kept, set to wall: it is
// when a receiver last let the delivery go, which Sweep reads.
func (w *World) releaseRecord(ctx context.Context, r *record, wall time.Time) error {
	if err := w.updateClaimed(ctx, r, "REMOVE #c SET #l = :l", map[string]types.AttributeValue{":l": n(wall.UnixMilli())}); err != nil {
		return fmt.Errorf("awsworld: release queue record %s: %w", r.ID, err)
	}
	return nil
}

// updateClaimed applies update to r's record while r's claim holds it; a claim
// lost meanwhile (lease expired and taken, record rewritten or deleted) is no
// error: the record is no longer this execution's to change.
func (w *World) updateClaimed(ctx context.Context, r *record, update string, values map[string]types.AttributeValue) error {
	vals := map[string]types.AttributeValue{":c": s(r.claim)}
	for k, v := range values {
		vals[k] = v
	}
	_, err := w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: w.table, Key: key(queuePK(r.ID), metaSK),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("#c = :c"),
		ExpressionAttributeNames:  map[string]string{"#c": attrClaim, "#l": attrLease},
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return err
}

// deleteRecord removes a delivered record while its execution still holds it and
// no later Queue call with the same ID re-armed it (a Queue call rewrites the
// record, dropping the claim), so a delivery queued again while running runs again.
func (w *World) deleteRecord(ctx context.Context, r *record) error {
	_, err := w.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: w.table, Key: key(queuePK(r.ID), metaSK),
		ConditionExpression:       aws.String("#d = :d AND #c = :c"),
		ExpressionAttributeNames:  map[string]string{"#d": attrDue, "#c": attrClaim},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": s(r.due), ":c": s(r.claim)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("awsworld: delete queue record %s: %w", r.ID, err)
	}
	return nil
}

// scheduled reports whether a delivery to q due after delay goes through Scheduler.
func (w *World) scheduled(q queueRef, delay time.Duration) bool {
	return delay > MaxSQSDelay || (q.FIFO && delay > 0)
}

// publish sends the delivery ID to q, now or after the delay until due.
func (w *World) publish(ctx context.Context, id string, q queueRef, runID string, due time.Time) error {
	delay := due.Sub(w.now())
	if delay < 0 {
		delay = 0
	}
	if w.scheduled(q, delay) {
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

// scheduleGroup is the Scheduler group, "default" when unset.
func (w *World) scheduleGroup() string {
	if g := w.cfg.Scheduler.Group; g != "" {
		return g
	}
	return "default"
}

func (w *World) schedule(ctx context.Context, id string, q queueRef, runID string, due time.Time) error {
	sc := w.cfg.Scheduler
	if sc == nil {
		return &worlds.ArgumentError{Field: "QueueOptions.DueAt", Value: due.Format(time.RFC3339), Reason: "a delayed FIFO delivery or one more than 15 minutes ahead needs Config.Scheduler"}
	}
	group := w.scheduleGroup()
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
