package awsworld

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// Search attributes: one item per attribute of a run, in the run's partition
// (pk RUN#<runID>, sk ATTR#<key>), written in the append's transaction
// whenever the attribute's value changes. Its attr_pk and attr_sk key the
// sparse attrs index, which holds only these items: attr_pk names the shard,
// the key and the value, attr_sk orders the run as the listings do. A
// listing by attributes queries the partitions of one pair in every shard and
// checks the run views it reads for the other pairs.
const (
	attrAttrPK = "attr_pk"
	attrAttrSK = "attr_sk"
	indexAttrs = "attrs"
	// maxAttrScan bounds the index entries one ListRuns call examines when
	// the other pairs or filters reject most of them: past it, the page is
	// returned short, with a cursor to go on from.
	maxAttrScan = 2000
)

func attrItemSK(key string) string { return "ATTR#" + key }

// attrIndexPK is the attrs partition of one key and value in one shard. The
// key's length makes it unambiguous whatever bytes the key and value hold
// (attributes given at start are not limited to the upsert key alphabet).
func attrIndexPK(shard, key, value string) string {
	return "ATTR#" + shard + "#" + strconv.Itoa(len(key)) + ":" + key + "=" + value
}

// attrActions returns the puts of the attribute items whose value the append
// changes: the run's attributes after its last effect against those before.
// An unchanged value writes nothing, neither the item nor its index entry.
func (w *World) attrActions(before *worlds.Run, after *worlds.Run) []types.TransactWriteItem {
	var prev map[string]string
	if before != nil {
		prev = before.Attributes
	}
	var actions []types.TransactWriteItem
	shard := shardOf(after.RunID, w.shards)
	for _, k := range slices.Sorted(maps.Keys(after.Attributes)) {
		v := after.Attributes[k]
		if old, ok := prev[k]; ok && old == v {
			continue
		}
		item := key(runPK(after.RunID), attrItemSK(k))
		item[attrAttrPK] = s(attrIndexPK(shard, k, v))
		item[attrAttrSK] = s(listSK(after.CreatedAt, after.RunID))
		actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: w.table, Item: item}})
	}
	return actions
}

// listByAttributes serves ListRuns with an attribute filter: it pages newest
// first through the attrs partitions of the filter's first pair (in key
// order) and keeps the runs whose consistent read matches the whole filter.
func (w *World) listByAttributes(ctx context.Context, f worlds.RunFilter, limit int, q indexQuery) (worlds.Page[worlds.Run], error) {
	keys := slices.Sorted(maps.Keys(f.Attributes))
	k, v := keys[0], f.Attributes[keys[0]]
	q.index, q.pkAttr, q.skAttr, q.status = indexAttrs, attrAttrPK, attrAttrSK, ""
	pks, err := w.shardPKs(ctx, func(shard string) string { return attrIndexPK(shard, k, v) })
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	page := worlds.Page[worlds.Run]{Items: []worlds.Run{}}
	cursor, scanned := f.Cursor, 0
	for {
		entries, next, err := w.queryShards(ctx, q, pks, "", limit, cursor)
		if err != nil {
			return worlds.Page[worlds.Run]{}, indexError(err)
		}
		runKeys := make([]map[string]types.AttributeValue, len(entries))
		for i, e := range entries {
			runKeys[i] = key(getS(e, attrPK), metaSK)
		}
		items, err := w.batchGet(ctx, runKeys)
		if err != nil {
			return worlds.Page[worlds.Run]{}, err
		}
		runs := map[string]*worlds.Run{}
		for _, item := range items {
			st, err := decodeRun(item)
			if err != nil {
				return worlds.Page[worlds.Run]{}, err
			}
			runs[st.run.RunID] = st.run
		}
		for i, e := range entries {
			scanned++
			// The index may lag the base table: an entry of a value the run
			// no longer has, or of a run already deleted, is left out.
			r := runs[strings.TrimPrefix(getS(e, attrPK), "RUN#")]
			if r != nil && (f.Status == "" || r.Status == f.Status) && (f.WorkflowName == "" || r.WorkflowName == f.WorkflowName) &&
				worlds.MatchAttributes(*r, f.Attributes) {
				page.Items = append(page.Items, *r)
			}
			if len(page.Items) == limit || scanned >= maxAttrScan {
				if i < len(entries)-1 || next != "" {
					page.Cursor = encodeCursor(map[string]string{"index": indexAttrs, "before": getS(e, attrAttrSK)})
				}
				return page, nil
			}
		}
		if next == "" {
			return page, nil
		}
		cursor = next
	}
}

// indexError explains a query of the attrs index on a table created before
// the index existed.
func indexError(err error) error {
	if strings.Contains(err.Error(), "specified index") || strings.Contains(err.Error(), "index: "+indexAttrs) {
		return fmt.Errorf("awsworld: the table has no %q index, which listings by attribute read: add it with the Terraform module, or UpdateTable (partition key %s, sort key %s, both strings, projection KEYS_ONLY): %w",
			indexAttrs, attrAttrPK, attrAttrSK, err)
	}
	return err
}

// attrIndex is the attrs index as CreateTable and the Terraform module define it.
func attrIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(indexAttrs),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrAttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrAttrSK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}
}
