package awsworld

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table records the highest ListShards any World has written index entries
// with, in one item. A World writing with N shards places entries in shards
// [0, N); a World configured with fewer (ListShards lowered, or an older
// instance during a rolling deploy that raises it) reads that many shards and
// would miss the rest. Listings and Sweep therefore read max(ListShards,
// recorded) shards, and every World raises the record before its first write.
const (
	shardsPK     = "CONFIG"
	shardsSK     = "LIST_SHARDS"
	attrShardMax = "list_shards"
)

// recordShards raises the table's recorded shard count to w.shards, once per
// World: it runs before any write that places an index entry.
func (w *World) recordShards(ctx context.Context) error {
	if w.shardsRecorded.Load() {
		return nil
	}
	_, err := w.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 w.table,
		Key:                       key(shardsPK, shardsSK),
		UpdateExpression:          aws.String("SET #n = :n"),
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :n"),
		ExpressionAttributeNames:  map[string]string{"#n": attrShardMax},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": n(int64(w.shards))},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) { // a failed condition: already as high
		return fmt.Errorf("awsworld: record list shards: %w", err)
	}
	w.shardsRecorded.Store(true)
	return nil
}

// readShards returns how many list shards a listing must read: the configured
// count or the highest any World wrote with, whichever is larger.
func (w *World) readShards(ctx context.Context) (int, error) {
	item, err := w.getItem(ctx, shardsPK, shardsSK)
	if err != nil {
		return 0, err
	}
	return int(min(max(int64(w.shards), getN(item, attrShardMax)), maxListShards)), nil
}

// shardPKs returns the partition keys of every list shard a listing must read.
func (w *World) shardPKs(ctx context.Context, pk func(shard string) string) ([]string, error) {
	shards, err := w.readShards(ctx)
	if err != nil {
		return nil, err
	}
	pks := make([]string, shards)
	for i := range pks {
		pks[i] = pk(strconv.Itoa(i))
	}
	return pks, nil
}
