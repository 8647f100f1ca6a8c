package awsworld

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// ScanAPI is the part of the DynamoDB client [World.IndexLegacyQueueRecords]
// and [World.IndexRunAttributes] need beyond [DynamoDBAPI]; *dynamodb.Client
// has it. New accepts a client without it, and those methods then fail with a
// *[ConfigError].
type ScanAPI interface {
	DynamoDBAPI
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// IndexLegacyQueueRecords gives the queue records written before the list index
// covered them (they have no list_pk) their index entries, so [World.Sweep]
// finds them: without it, a delivery queued by an older version whose message is
// lost is never sent again. Run it once after upgrading, from a process allowed
// dynamodb:Scan on the table; it reads the whole table, so it costs one read of
// every item. It is idempotent, and safe while the World serves traffic: each
// record is updated only while it still exists unchanged and unindexed. It
// returns how many records it indexed.
func (w *World) IndexLegacyQueueRecords(ctx context.Context) (int, error) {
	sc, ok := w.db.(ScanAPI)
	if !ok {
		return 0, &ConfigError{Field: "db", Value: fmt.Sprintf("%T", w.db), Reason: "does not implement awsworld.ScanAPI (Scan)"}
	}
	if err := w.recordShards(ctx); err != nil {
		return 0, err
	}
	in := &dynamodb.ScanInput{
		TableName:                w.table,
		FilterExpression:         aws.String("begins_with(#pk, :q) AND #sk = :meta AND attribute_not_exists(#lpk)"),
		ProjectionExpression:     aws.String("#pk, #sk, #data, #due"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK, "#lpk": attrListPK, "#data": attrData, "#due": attrDue},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":q": s("QUEUE#"), ":meta": s(metaSK),
		},
	}
	indexed := 0
	for {
		out, err := sc.Scan(ctx, in)
		if err != nil {
			return indexed, fmt.Errorf("awsworld: scan for legacy queue records: %w", err)
		}
		for _, item := range out.Items {
			ok, err := w.indexLegacyRecord(ctx, item)
			if err != nil {
				return indexed, err
			}
			if ok {
				indexed++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return indexed, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// indexLegacyRecord adds the list and list_group keys Queue writes today to one
// legacy queue record, unless it was deleted, rewritten or indexed since.
func (w *World) indexLegacyRecord(ctx context.Context, item map[string]types.AttributeValue) (bool, error) {
	id := getS(item, attrPK)[len("QUEUE#"):]
	rec, err := decodeRecord(id, item)
	if err != nil {
		// Not a record this World can run; Sweep could not send it either.
		w.log.WarnContext(ctx, "awsworld: legacy queue record left unindexed", "id", id, "err", err)
		return false, nil
	}
	_, err = w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                w.table,
		Key:                      key(queuePK(id), metaSK),
		UpdateExpression:         aws.String("SET #lpk = :lpk, #lsk = :sk, #gpk = :gpk, #gsk = :sk"),
		ConditionExpression:      aws.String("#due = :due AND attribute_not_exists(#lpk)"),
		ExpressionAttributeNames: map[string]string{"#lpk": attrListPK, "#lsk": attrListSK, "#gpk": attrGroupPK, "#gsk": attrGroupSK, "#due": attrDue},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lpk": s(queueShardPK(shardOf(id, w.shards))), ":sk": s(listSK(rec.DueAt, id)),
			":gpk": s(runQueuePK(rec.Input.RunID)), ":due": s(rec.due),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("awsworld: index legacy queue record %s: %w", id, err)
	}
	return true, nil
}

// IndexRunAttributes gives the runs written before the attrs index existed
// their attribute items, so listings by attribute ([worlds.RunFilter].
// Attributes) find them: without it such a run is found only by the
// attributes set after the upgrade. Run it once after upgrading (the CLI's
// cairn sweep --index-legacy does), from a process allowed dynamodb:Scan on
// the table; it reads every item of the table and writes one item per
// attribute of every run that has attributes. It is idempotent, and safe while
// the World serves traffic: each run's items are written in a transaction that
// holds only while the run is unchanged, and a run that changed meanwhile is
// read again. It returns how many runs it indexed.
func (w *World) IndexRunAttributes(ctx context.Context) (int, error) {
	sc, ok := w.db.(ScanAPI)
	if !ok {
		return 0, &ConfigError{Field: "db", Value: fmt.Sprintf("%T", w.db), Reason: "does not implement awsworld.ScanAPI (Scan)"}
	}
	if err := w.recordShards(ctx); err != nil {
		return 0, err
	}
	in := &dynamodb.ScanInput{
		TableName:                w.table,
		FilterExpression:         aws.String("begins_with(#pk, :r) AND #sk = :meta"),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":r": s("RUN#"), ":meta": s(metaSK),
		},
	}
	indexed := 0
	for {
		out, err := sc.Scan(ctx, in)
		if err != nil {
			return indexed, fmt.Errorf("awsworld: scan for runs: %w", err)
		}
		for _, item := range out.Items {
			ok, err := w.indexRunAttributes(ctx, getS(item, attrPK)[len("RUN#"):])
			if err != nil {
				return indexed, err
			}
			if ok {
				indexed++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return indexed, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// indexRunAttributes writes the attribute items of one run as its view holds
// them, guarded by its event count; it reports false for a run without
// attributes or gone meanwhile.
func (w *World) indexRunAttributes(ctx context.Context, runID string) (bool, error) {
	for attempt := 0; attempt < maxAppendAttempts; attempt++ {
		st, err := w.loadRun(ctx, runID)
		if err != nil {
			return false, err
		}
		if st.run == nil || len(st.run.Attributes) == 0 {
			return false, nil
		}
		puts := w.attrActions(nil, st.run)
		conflict := false
		for start := 0; start < len(puts) && !conflict; start += maxTransactions - 1 {
			actions := []types.TransactWriteItem{{ConditionCheck: &types.ConditionCheck{
				TableName: w.table, Key: key(runPK(runID), metaSK),
				ConditionExpression:       aws.String("#c = :c"),
				ExpressionAttributeNames:  map[string]string{"#c": attrCount},
				ExpressionAttributeValues: map[string]types.AttributeValue{":c": n(st.run.EventCount)},
			}}}
			actions = append(actions, puts[start:min(start+maxTransactions-1, len(puts))]...)
			_, err := w.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
			switch {
			case err == nil:
			case retryableTxn(err):
				conflict = true
			default:
				return false, fmt.Errorf("awsworld: index attributes of run %s: %w", runID, err)
			}
		}
		if !conflict {
			return true, nil
		}
		if err := w.sleep(ctx, backoff(attempt)); err != nil {
			return false, err
		}
	}
	return false, fmt.Errorf("awsworld: index attributes of run %s after %d attempts: %w", runID, maxAppendAttempts, worlds.ErrAppendContention)
}
