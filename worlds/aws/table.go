package awsworld

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// Attribute and index names of the table layout.
const (
	attrPK          = "pk"
	attrSK          = "sk"
	attrListPK      = "list_pk"
	attrListSK      = "list_sk"
	attrGroupPK     = "list_group_pk"
	attrGroupSK     = "list_group_sk"
	attrStatus      = "status"
	attrData        = "data"
	attrCount       = "event_count"
	attrHookIDs     = "hook_ids"
	attrSeq         = "created_seq"
	attrHook        = "hook_id"
	attrRun         = "run_id"
	attrChunks      = "chunks"
	attrClosed      = "closed"
	attrName        = "name"
	attrCreated     = "created_at"
	attrUpdated     = "updated_at"
	attrDue         = "due_at"
	attrQueue       = "queue"
	attrClaim       = "claim"
	attrLease       = "lease_until"
	attrAttempts    = "attempts"
	attrPublished   = "published_at"
	attrScheduled   = "scheduled"
	attrUnsent      = "unsent"
	attrAppendID    = "append_id"
	indexList       = "list"
	indexListGroup  = "list_group"
	metaSK          = "META"
	maxItemBytes    = 400 * 1024
	maxTransactions = 100
	// MaxStreamWrite is the most chunks one WriteStream call accepts: with the stream
	// item they fill one 100-action transaction.
	MaxStreamWrite = maxTransactions - 1
)

func runPK(runID string) string   { return "RUN#" + runID }
func hookPK(hookID string) string { return "HOOK#" + hookID }
func tokenPK(token string) string { return "TOKEN#" + token }
func queuePK(id string) string    { return "QUEUE#" + id }
func eventSK(seq int64) string    { return fmt.Sprintf("EVENT#%026d", seq) }
func stepSK(stepID string) string { return "STEP#" + stepID }
func waitSK(waitID string) string { return "WAIT#" + waitID }
func streamKey(name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(name))
}
func streamSK(name string) string { return "STREAM#" + streamKey(name) }
func chunkSK(name string, index int) string {
	return fmt.Sprintf("CHUNK#%s#%010d", streamKey(name), index)
}

// sortTime formats t so that strings sort like times.
func sortTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func listSK(created time.Time, id string) string { return sortTime(created) + "#" + id }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: s(pk), attrSK: s(sk)}
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

func getBool(item map[string]types.AttributeValue, name string) bool {
	v, ok := item[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func getSS(item map[string]types.AttributeValue, name string) []string {
	if v, ok := item[name].(*types.AttributeValueMemberSS); ok {
		return v.Value
	}
	return nil
}

func decodeData[T any](item map[string]types.AttributeValue) (*T, error) {
	var v T
	if err := json.Unmarshal([]byte(getS(item, attrData)), &v); err != nil {
		return nil, fmt.Errorf("awsworld: decode %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
	}
	return &v, nil
}

func encodeData(v any) types.AttributeValue {
	b, err := json.Marshal(v)
	if err != nil { // the model types always marshal
		panic(err)
	}
	return s(string(b))
}

// DefaultListShards is Config.ListShards when it is zero.
const DefaultListShards = 16

// shardOf spreads IDs evenly over n list shards.
func shardOf(id string, n int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return strconv.Itoa(int(h.Sum32() % uint32(n)))
}

// Partition keys of the list indexes. Runs, hooks and queue records are spread
// over the World's list shards so no index partition takes every write; a
// listing reads every shard and merges them in sort-key order.
func runsShardPK(shard string) string               { return "RUNS#" + shard }
func hooksShardPK(shard string) string              { return "HOOKS#" + shard }
func queueShardPK(shard string) string              { return "QUEUE#" + shard }
func workflowShardPK(workflow, shard string) string { return "RUNS#" + workflow + "#" + shard }
func runHooksPK(runID string) string                { return "HOOKS#" + runID }

// Partition keys the list indexes used before they were sharded. Items written
// then keep them until they are next written; listings read them as one more
// partition. A run's hooks (list_group HOOKS#<runID>) kept theirs; queue records
// had no index entry ([World.IndexLegacyQueueRecords] gives them one).
const (
	legacyRunsPK  = "RUNS"
	legacyHooksPK = "HOOKS"
)

func legacyWorkflowPK(workflow string) string { return "RUNS#" + workflow }
func runQueuePK(runID string) string          { return "QUEUE#" + runID }

func (w *World) runItem(r *worlds.Run, hookIDs []string) map[string]types.AttributeValue {
	shard := shardOf(r.RunID, w.shards)
	item := key(runPK(r.RunID), metaSK)
	item[attrData] = encodeData(r)
	item[attrCount] = n(r.EventCount)
	item[attrStatus] = s(string(r.Status))
	item[attrListPK] = s(runsShardPK(shard))
	item[attrListSK] = s(listSK(r.CreatedAt, r.RunID))
	item[attrGroupPK] = s(workflowShardPK(r.WorkflowName, shard))
	item[attrGroupSK] = s(listSK(r.CreatedAt, r.RunID))
	if len(hookIDs) > 0 {
		item[attrHookIDs] = &types.AttributeValueMemberSS{Value: hookIDs}
	}
	return item
}

func (w *World) hookItem(h *worlds.Hook) map[string]types.AttributeValue {
	item := key(hookPK(h.HookID), metaSK)
	item[attrData] = encodeData(h)
	item[attrStatus] = s(string(h.Status))
	item[attrRun] = s(h.RunID)
	item[attrListPK] = s(hooksShardPK(shardOf(h.HookID, w.shards)))
	item[attrListSK] = s(listSK(h.CreatedAt, h.HookID))
	item[attrGroupPK] = s(runHooksPK(h.RunID))
	item[attrGroupSK] = s(listSK(h.CreatedAt, h.HookID))
	return item
}

// itemSize approximates DynamoDB's item size: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	size := 0
	for name, v := range item {
		size += len(name) + attrSize(v)
	}
	return size
}

func attrSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		size := 0
		for _, e := range v.Value {
			size += len(e)
		}
		return size
	case *types.AttributeValueMemberBOOL:
		return 1
	}
	return 8
}

// CreateTable creates the World's table, with the list, list_group and attrs indexes,
// billed on demand, and waits until it is active. It is meant for tests and
// DynamoDB Local; production tables come from the Terraform module.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	str := types.ScalarAttributeTypeS
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(sk), KeyType: types.KeyTypeRange}}
	}
	projection := &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{attrStatus}}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: str},
			{AttributeName: aws.String(attrSK), AttributeType: str},
			{AttributeName: aws.String(attrListPK), AttributeType: str},
			{AttributeName: aws.String(attrListSK), AttributeType: str},
			{AttributeName: aws.String(attrGroupPK), AttributeType: str},
			{AttributeName: aws.String(attrGroupSK), AttributeType: str},
			{AttributeName: aws.String(attrAttrPK), AttributeType: str},
			{AttributeName: aws.String(attrAttrSK), AttributeType: str},
		},
		KeySchema: keys(attrPK, attrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String(indexList), KeySchema: keys(attrListPK, attrListSK), Projection: projection},
			{IndexName: aws.String(indexListGroup), KeySchema: keys(attrGroupPK, attrGroupSK), Projection: projection},
			attrIndex(),
		},
	})
	if err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("awsworld: create table %s: %w", name, err)
		}
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return fmt.Errorf("awsworld: wait for table %s: %w", name, err)
	}
	return nil
}
