package awsworld

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/cairn-go/cairn/worlds"
)

// retention returns how long a finished run of workflow is kept; zero keeps it.
func (w *World) retention(workflow string) time.Duration {
	if d, ok := w.cfg.Retentions[workflow]; ok {
		return d
	}
	return w.cfg.Retention
}

// queueExpiry queues the run's expiry under its fixed ID, due its retention after
// the run finished, so repeating it replaces rather than duplicates the delivery.
func (w *World) queueExpiry(ctx context.Context, run *worlds.Run) error {
	d := w.retention(run.WorkflowName)
	if d <= 0 || !run.Status.Terminal() {
		return nil
	}
	finished := run.UpdatedAt
	if run.CompletedAt != nil {
		finished = *run.CompletedAt
	}
	_, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverExpire, WorkflowName: run.WorkflowName, RunID: run.RunID},
		worlds.QueueOptions{ID: ExpireID(run.RunID), DueAt: finished.Add(d)})
	return err
}

// errDeferred reports an expiry put off because a hook still holds its token.
var errDeferred = errors.New("awsworld: expiry deferred")

// expire deletes a finished run: its hooks, the tokens they still own, and every
// item of its partition, the run view last, so a cleanup cut short is retried while
// the run still exists. Runs still pending or running are kept.
func (w *World) expire(ctx context.Context, runID string) error {
	st, err := w.loadRun(ctx, runID)
	if err != nil {
		return err
	}
	if st.run == nil || !st.run.Status.Terminal() {
		return nil
	}
	ids := map[string]bool{}
	var hookIDs []string
	add := func(id string) {
		if !ids[id] {
			ids[id] = true
			hookIDs = append(hookIDs, id)
		}
	}
	for _, id := range st.hookIDs {
		add(id)
	}
	keys, err := w.queryIndex(ctx, indexQuery{index: indexListGroup, pkAttr: attrGroupPK, skAttr: attrGroupSK, pk: runHooksPK(runID)}, 1<<30)
	if err != nil {
		return err
	}
	for _, k := range keys {
		add(getS(k, attrPK)[len("HOOK#"):])
	}
	hooks, err := w.batchGetHooks(ctx, hookIDs)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if h.Status == worlds.HookActive {
			// The token is still retained: come back one retention period later.
			if err := w.deferExpiry(ctx, st.run); err != nil {
				return err
			}
			return errDeferred
		}
	}
	var deletes []map[string]types.AttributeValue
	for _, h := range hooks {
		if err := w.deleteOwnedToken(ctx, h); err != nil {
			return err
		}
		deletes = append(deletes, key(hookPK(h.HookID), metaSK))
	}
	err = w.queryRun(ctx, runID, "0", "\uffff", 0, func(item map[string]types.AttributeValue) bool {
		if sk := getS(item, attrSK); sk != metaSK {
			deletes = append(deletes, key(runPK(runID), sk))
		}
		return true
	})
	if err != nil {
		return err
	}
	if err := w.batchDelete(ctx, deletes); err != nil {
		return err
	}
	return w.batchDelete(ctx, []map[string]types.AttributeValue{key(runPK(runID), metaSK)})
}

func (w *World) deferExpiry(ctx context.Context, run *worlds.Run) error {
	d := max(w.retention(run.WorkflowName), time.Second)
	_, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverExpire, WorkflowName: run.WorkflowName, RunID: run.RunID},
		worlds.QueueOptions{ID: ExpireID(run.RunID), DueAt: w.now().Add(min(d, w.maxDelay()))})
	return err
}

func (w *World) maxDelay() time.Duration {
	if w.cfg.Scheduler == nil {
		return MaxSQSDelay
	}
	return 1 << 62
}

// deleteOwnedToken deletes the hook's token item only while this hook owns it.
func (w *World) deleteOwnedToken(ctx context.Context, h worlds.Hook) error {
	_, err := w.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: w.table, Key: key(tokenPK(h.Token), metaSK),
		ConditionExpression:       aws.String("#h = :h"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHook},
		ExpressionAttributeValues: map[string]types.AttributeValue{":h": s(h.HookID)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("awsworld: delete token of hook %s: %w", h.HookID, err)
	}
	return nil
}

// batchDelete deletes keys with BatchWriteItem, 25 at a time, retrying
// unprocessed items with backoff.
func (w *World) batchDelete(ctx context.Context, keys []map[string]types.AttributeValue) error {
	for start := 0; start < len(keys); start += 25 {
		var reqs []types.WriteRequest
		for _, k := range keys[start:min(start+25, len(keys))] {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
		}
		for attempt := 0; len(reqs) > 0; attempt++ {
			out, err := w.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{w.cfg.TableName: reqs}})
			if err != nil {
				return fmt.Errorf("awsworld: batch delete: %w", err)
			}
			reqs = out.UnprocessedItems[w.cfg.TableName]
			if len(reqs) > 0 {
				if err := w.sleep(ctx, backoff(attempt)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// dropPending deletes the deliveries a finished run still has due later (the
// wake-ups of its sleeps, its step retries) and their Scheduler schedules, once
// the run is cancelled or otherwise finished. Its expiry is kept. It is best
// effort: the run has finished either way, and a delivery left behind finds
// nothing to do. The run's deliveries are found through QUEUE#<runID> on
// list_group, which is eventually consistent.
func (w *World) dropPending(ctx context.Context, runID string) {
	ctx = context.WithoutCancel(ctx)
	now := w.now()
	keys, err := w.queryIndex(ctx, indexQuery{index: indexListGroup, pkAttr: attrGroupPK, skAttr: attrGroupSK, pk: runQueuePK(runID), after: sortTime(now) + "#\uffff"}, 1<<30)
	if err == nil {
		var items []map[string]types.AttributeValue
		if items, err = w.fetch(ctx, keys); err == nil {
			for _, item := range items {
				id := getS(item, attrPK)[len("QUEUE#"):]
				if id == ExpireID(runID) {
					continue
				}
				rec, derr := decodeRecord(id, item)
				if derr == nil {
					derr = w.dropRecord(ctx, rec, now)
				}
				err = errors.Join(err, derr)
			}
		}
	}
	if err != nil {
		w.log.WarnContext(ctx, "awsworld: deleting a finished run's pending deliveries; they find nothing to do when due", "runId", runID, "err", err)
	}
}

// dropRecord deletes a pending delivery unless it changed or is being executed,
// then its schedule.
func (w *World) dropRecord(ctx context.Context, rec *record, now time.Time) error {
	_, err := w.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: w.table, Key: key(queuePK(rec.ID), metaSK),
		ConditionExpression:       aws.String("#d = :d AND (attribute_not_exists(#c) OR #l < :now)"),
		ExpressionAttributeNames:  map[string]string{"#d": attrDue, "#c": attrClaim, "#l": attrLease},
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": s(rec.due), ":now": n(now.UnixMilli())},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("awsworld: delete pending delivery %s: %w", rec.ID, err)
	}
	sc := w.cfg.Scheduler
	if !rec.scheduled || sc == nil {
		return nil
	}
	_, err = sc.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(scheduleName(rec.ID)), GroupName: aws.String(w.scheduleGroup())})
	var nf *schedtypes.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("awsworld: delete schedule of %s: %w", rec.ID, err)
	}
	return nil
}
