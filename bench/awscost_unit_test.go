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
	m := newAWSMeter()
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
