package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestAWSMeterBill checks the meter's accounting and the price formula on
// hand-made requests, without the emulators.
func TestAWSMeterBill(t *testing.T) {
	m := newAWSMeter(nil)
	in := &dynamodb.TransactWriteItemsInput{}
	askCapacity(in)
	if in.ReturnConsumedCapacity != ddbtypes.ReturnConsumedCapacityTotal {
		t.Fatalf("ReturnConsumedCapacity = %q", in.ReturnConsumedCapacity)
	}
	m.record("DynamoDB.TransactWriteItems", in, &dynamodb.TransactWriteItemsOutput{
		ConsumedCapacity: []ddbtypes.ConsumedCapacity{{CapacityUnits: aws.Float64(4), WriteCapacityUnits: aws.Float64(4)}}})
	m.record("DynamoDB.GetItem", &dynamodb.GetItemInput{}, &dynamodb.GetItemOutput{
		ConsumedCapacity: &ddbtypes.ConsumedCapacity{CapacityUnits: aws.Float64(0.5)}})
	big := strings.Repeat("x", 65537)
	m.record("SQS.SendMessage", &sqs.SendMessageInput{MessageBody: aws.String(big)}, &sqs.SendMessageOutput{})
	m.record("SQS.SendMessageBatch", &sqs.SendMessageBatchInput{Entries: []sqstypes.SendMessageBatchRequestEntry{
		{MessageBody: aws.String("a")}, {MessageBody: aws.String("b")}}}, &sqs.SendMessageBatchOutput{})
	m.record("Scheduler.CreateSchedule", nil, nil)

	b := m.bill(2)
	if b.wcu != 4 || b.rcu != 0.5 {
		t.Fatalf("units: wcu %v rcu %v, want 4 and 0.5", b.wcu, b.rcu)
	}
	if b.sqsUnits != 3 { // 2 chunks for 64 KiB + 1 byte, 1 for the small batch
		t.Fatalf("SQS chunks %d, want 3", b.sqsUnits)
	}
	if b.requests["DynamoDB.TransactWriteItems"] != 1 || b.schedules != 1 {
		t.Fatalf("requests %v, schedules %d", b.requests, b.schedules)
	}
	want := 4*0.625e-6 + 0.5*0.125e-6 + 3*0.40e-6 + 1e-6 + 2*(0.20e-6+0.25*0.020*0.0000133334)
	if got := b.total(); math.Abs(got-want) > 1e-15 {
		t.Fatalf("total %g, want %g", got, want)
	}
}

// TestWriteUnits checks the meter's write units against AWS's on-demand rules on
// hand-made item images.
func TestWriteUnits(t *testing.T) {
	str := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	item := func(kv ...string) map[string]ddbtypes.AttributeValue {
		m := map[string]ddbtypes.AttributeValue{"pk": str("RUN#r"), "sk": str("META")}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = str(kv[i+1])
		}
		return m
	}
	listed := func(status, listSK string, extra ...string) map[string]ddbtypes.AttributeValue {
		return item(append([]string{"list_pk", "RUNS#1", "list_sk", listSK, "list_group_pk", "RUNS#w#1", "list_group_sk", listSK, "status", status}, extra...)...)
	}
	kb := strings.Repeat("x", 1500)
	tests := []struct {
		name          string
		before, after map[string]ddbtypes.AttributeValue
		txn           bool
		want          float64
	}{
		{"new small item", nil, item("data", "{}"), false, 1},
		{"new small item in a transaction", nil, item("data", "{}"), true, 2},
		{"1.5 KB item in a transaction", nil, item("data", kb), true, 4},
		{"shrinking update billed by the larger image", item("data", kb), item("data", "{}"), false, 2},
		{"delete", item("data", "{}"), nil, false, 1},
		{"refused write", item("data", "{}"), item("data", "{}"), true, 2},
		{"new run view enters two indexes", nil, listed("pending", "t1#r"), true, 2 + 1 + 1},
		{"run view rewritten, indexes unchanged", listed("running", "t1#r", "data", "a"), listed("running", "t1#r", "data", "b"), true, 2},
		{"status change rewrites both entries", listed("pending", "t1#r"), listed("running", "t1#r"), true, 2 + 1 + 1},
		{"key change deletes and adds", listed("running", "t1#r"), listed("running", "t2#r"), false, 1 + 2 + 2},
		{"keys-only index", nil, item("attr_pk", "ATTR#0#1:k=v", "attr_sk", "t1#r"), true, 2 + 1},
	}
	for _, tt := range tests {
		if got := writeUnits(tt.before, tt.after, tt.txn); got != tt.want {
			t.Errorf("%s: %v write units, want %v", tt.name, got, tt.want)
		}
	}
	if got := itemBytes(map[string]ddbtypes.AttributeValue{"n": &ddbtypes.AttributeValueMemberN{Value: "12345"}, "ok": &ddbtypes.AttributeValueMemberBOOL{Value: true}}); got != 1+4+2+1 {
		t.Errorf("itemBytes = %d, want 8", got)
	}
}

// TestReadUnits checks the meter's read units against AWS's on-demand rules on
// hand-made requests and answers.
func TestReadUnits(t *testing.T) {
	str := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	item := func(size int) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"pk": str("p"), "sk": str("s"), "d": str(strings.Repeat("x", size-5))}
	}
	keys := func(n int) []map[string]ddbtypes.AttributeValue { return make([]map[string]ddbtypes.AttributeValue, n) }
	for _, tc := range []struct {
		name   string
		params any
		result any
		want   float64
	}{
		{"consistent get of a small item", &dynamodb.GetItemInput{ConsistentRead: aws.Bool(true)}, &dynamodb.GetItemOutput{Item: item(300)}, 1},
		{"consistent get of a missing item", &dynamodb.GetItemInput{ConsistentRead: aws.Bool(true)}, &dynamodb.GetItemOutput{}, 1},
		{"eventually consistent get of 4 KB + 1", &dynamodb.GetItemInput{}, &dynamodb.GetItemOutput{Item: item(4097)}, 1},
		{"batch: two found (1 and 2 blocks), one missing", &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
			"t": {Keys: keys(3), ConsistentRead: aws.Bool(true)}}},
			&dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]ddbtypes.AttributeValue{"t": {item(100), item(5000)}}}, 4},
		{"batch: unprocessed keys are not read", &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
			"t": {Keys: keys(3), ConsistentRead: aws.Bool(true)}}},
			&dynamodb.BatchGetItemOutput{UnprocessedKeys: map[string]ddbtypes.KeysAndAttributes{"t": {Keys: keys(2)}}}, 1},
		{"query sums its items before rounding", &dynamodb.QueryInput{ConsistentRead: aws.Bool(true)},
			&dynamodb.QueryOutput{Items: []map[string]ddbtypes.AttributeValue{item(3000), item(3000)}}, 2},
		{"index query finding nothing", &dynamodb.QueryInput{}, &dynamodb.QueryOutput{}, 0.5},
	} {
		got, ok := readUnits(tc.params, tc.result)
		if !ok || got != tc.want {
			t.Errorf("%s: %v (priced %v), want %v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := readUnits(&dynamodb.ScanInput{}, &dynamodb.ScanOutput{}); ok {
		t.Error("Scan priced; it should keep the reported units")
	}
}
