package awsworld_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// countingDB counts DynamoDB requests by kind.
type countingDB struct {
	awsworld.DynamoDBAPI
	reads, writes, txns atomic.Int64
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.reads.Add(1)
	return c.DynamoDBAPI.GetItem(ctx, in, o...)
}
func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.reads.Add(1)
	return c.DynamoDBAPI.Query(ctx, in, o...)
}
func (c *countingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.reads.Add(1)
	return c.DynamoDBAPI.BatchGetItem(ctx, in, o...)
}
func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.writes.Add(1)
	return c.DynamoDBAPI.PutItem(ctx, in, o...)
}
func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.writes.Add(1)
	return c.DynamoDBAPI.DeleteItem(ctx, in, o...)
}
func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.writes.Add(1)
	return c.DynamoDBAPI.UpdateItem(ctx, in, o...)
}
func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.txns.Add(1)
	return c.DynamoDBAPI.TransactWriteItems(ctx, in, o...)
}

type countingSQS struct {
	awsworld.SQSAPI
	sends atomic.Int64
}

func (c *countingSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.sends.Add(1)
	return c.SQSAPI.SendMessage(ctx, in, o...)
}

const benchSteps = 5

// Chain is a workflow of benchSteps sequential steps.
type Chain struct{}

func (Chain) Run(ctx workflow.Context, n int) (int, error) {
	for i := range benchSteps {
		var err error
		n, err = workflow.Step(ctx, fmt.Sprintf("add-%d", i), func(_ context.Context, v int) (int, error) { return v + 1, nil }, n)
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// BenchmarkWorkflowStep runs Chain through the Lambda handler on DynamoDB Local and
// fauxqs and reports DynamoDB and SQS requests per workflow step.
func BenchmarkWorkflowStep(b *testing.B) {
	db := &countingDB{DynamoDBAPI: testenv.DynamoDB(b)}
	sq := testenv.SQS(b)
	cs := &countingSQS{SQSAPI: sq}
	table := testenv.UniqueName(b, "bench")
	if err := awsworld.CreateTable(context.Background(), testenv.DynamoDB(b), table); err != nil {
		b.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(b, testenv.DynamoDB(b), table)
	url, arn := testenv.CreateQueue(b, sq, testenv.UniqueName(b, "bench"), false)
	w, err := awsworld.New(awsworld.Config{BaseURL: "https://example.com/v1/workflow", TableName: table, QueueURL: url}, db, cs)
	if err != nil {
		b.Fatal(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.FlushCache)
	// The client's runner: warm invocations share its run cache, as on Lambda.
	handler := awsworld.Queue(w, client.Runner(workflow.Use(Chain{})))
	ctx := context.Background()
	var receives int64
	b.ResetTimer()
	for range b.N {
		run, err := workflow.Start(ctx, client, Chain{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		for {
			r, err := w.GetRun(ctx, run.ID())
			if err != nil {
				b.Fatal(err)
			}
			if r.Status.Terminal() {
				if r.Status != worlds.RunCompleted {
					b.Fatalf("run %s", r.Status)
				}
				break
			}
			out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
			if err != nil {
				b.Fatal(err)
			}
			receives++
			var ev events.SQSEvent
			for _, m := range out.Messages {
				ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
					Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: arn})
			}
			hctx, cancel := context.WithTimeout(ctx, time.Minute)
			resp, err := handler(hctx, ev)
			cancel()
			if err != nil || len(resp.BatchItemFailures) > 0 {
				b.Fatalf("handler: %v %+v", err, resp.BatchItemFailures)
			}
			for _, m := range out.Messages {
				_, _ = sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
	b.StopTimer()
	steps := float64(b.N * benchSteps)
	b.ReportMetric(float64(db.txns.Load())/steps, "txn/step")
	b.ReportMetric(float64(db.reads.Load())/steps, "ddb-reads/step")
	b.ReportMetric(float64(db.writes.Load())/steps, "ddb-writes/step")
	b.ReportMetric(float64(cs.sends.Load())/steps, "sqs-sends/step")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/steps, "ns/step")
}
