package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Prices are public us-east-1 on-demand list prices in USD, read on
// 2026-12-05 from aws.amazon.com/dynamodb/pricing/on-demand,
// aws.amazon.com/sqs/pricing, aws.amazon.com/eventbridge/pricing (Scheduler)
// and aws.amazon.com/lambda/pricing. Free tiers are ignored.
var prices = struct {
	DynamoDBWriteUnit, DynamoDBReadUnit float64 // per request unit
	SQSRequest                          float64 // per 64 KiB chunk of a standard-queue request
	SchedulerInvocation                 float64 // per scheduled invocation; Scheduler API calls are not billed
	LambdaRequest                       float64 // per invocation
	LambdaGBSecondArm                   float64 // per GB-second, arm64
}{
	DynamoDBWriteUnit:   0.625 / 1e6,
	DynamoDBReadUnit:    0.125 / 1e6,
	SQSRequest:          0.40 / 1e6,
	SchedulerInvocation: 1.00 / 1e6,
	LambdaRequest:       0.20 / 1e6,
	LambdaGBSecondArm:   0.0000133334,
}

// The Lambda worker is assumed to be an arm64 function with 256 MB of memory
// whose every invocation (one SQS batch) bills this long: the emulators do not
// run Lambda, so its duration is an assumption, not a measurement.
const (
	lambdaMemoryGB       = 0.25
	lambdaBilledDuration = 20 * time.Millisecond
)

// awsMeter counts AWS requests by service and operation, DynamoDB consumed
// capacity, and SQS billed 64 KiB chunks, through an SDK middleware.
// Write units are computed from the written items (see awswrites_test.go); the
// units DynamoDB Local reports for writes are kept apart, as localWCU.
type awsMeter struct {
	mu       sync.Mutex
	images   *dynamodb.Client // unmetered; nil: write units are not computed
	requests map[string]int64
	wcu, rcu float64
	// localWCU and localRCU are what DynamoDB Local reported.
	localWCU, localRCU float64
	sqsUnits           int64
	err                error
}

func newAWSMeter(images *dynamodb.Client) *awsMeter {
	return &awsMeter{images: images, requests: map[string]int64{}}
}

// apply installs the meter on an SDK client's middleware stack.
func (m *awsMeter) apply(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("cairnCostMeter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			askCapacity(in.Parameters)
			var writes []itemWrite
			var before []map[string]ddbtypes.AttributeValue
			if m.images != nil {
				writes = writesOf(in.Parameters)
				var err error
				if before, err = images(ctx, m.images, writes); err != nil {
					m.fail(err)
				}
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if len(writes) > 0 && before != nil {
				after, ierr := images(ctx, m.images, writes)
				if ierr != nil {
					m.fail(ierr)
				} else {
					units := 0.0
					for i, w := range writes {
						units += writeUnits(before[i], after[i], w.transactional)
					}
					m.mu.Lock()
					m.wcu += units
					m.mu.Unlock()
				}
			}
			m.record(awsmiddleware.GetServiceID(ctx)+"."+awsmiddleware.GetOperationName(ctx), in.Parameters, out.Result)
			return out, md, err
		}), middleware.Before)
}

func (m *awsMeter) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = fmt.Errorf("reading written items for the meter: %w", err)
	}
}

// askCapacity asks DynamoDB to return the capacity each request consumed.
func askCapacity(params any) {
	total := ddbtypes.ReturnConsumedCapacityTotal
	switch p := params.(type) {
	case *dynamodb.GetItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.PutItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.BatchGetItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.BatchWriteItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.TransactWriteItemsInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.TransactGetItemsInput:
		p.ReturnConsumedCapacity = total
	}
}

func (m *awsMeter) record(op string, params, result any) {
	var caps []ddbtypes.ConsumedCapacity
	switch r := result.(type) {
	case *dynamodb.GetItemOutput:
		caps = optCap(r.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		caps = optCap(r.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		caps = optCap(r.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		caps = optCap(r.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		caps = optCap(r.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		caps = r.ConsumedCapacity
	case *dynamodb.BatchWriteItemOutput:
		caps = r.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		caps = r.ConsumedCapacity
	case *dynamodb.TransactGetItemsOutput:
		caps = r.ConsumedCapacity
	}
	units := int64(1)
	switch p := params.(type) {
	case *sqs.SendMessageInput:
		units = chunks64K(len(aws.ToString(p.MessageBody)))
	case *sqs.SendMessageBatchInput:
		n := 0
		for _, e := range p.Entries {
			n += len(aws.ToString(e.MessageBody))
		}
		units = chunks64K(n)
	}
	write := strings.Contains(op, "Write") || strings.Contains(op, "Put") || strings.Contains(op, "Update") || strings.Contains(op, "Delete")
	var reportedRCU float64
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[op]++
	if strings.HasPrefix(op, "SQS.") {
		m.sqsUnits += units
	}
	for _, c := range caps {
		switch {
		case c.WriteCapacityUnits != nil || c.ReadCapacityUnits != nil:
			m.localWCU += aws.ToFloat64(c.WriteCapacityUnits)
			reportedRCU += aws.ToFloat64(c.ReadCapacityUnits)
		case c.CapacityUnits != nil && write:
			m.localWCU += *c.CapacityUnits
		case c.CapacityUnits != nil:
			reportedRCU += *c.CapacityUnits
		}
	}
	m.localRCU += reportedRCU
	if computed, ok := readUnits(params, result); ok && m.images != nil {
		m.rcu += computed
	} else {
		m.rcu += reportedRCU
	}
}

func optCap(c *ddbtypes.ConsumedCapacity) []ddbtypes.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []ddbtypes.ConsumedCapacity{*c}
}

func chunks64K(n int) int64 { return max(1, int64((n+65535)/65536)) }

// awsBill is the priced result of a benchmark run.
type awsBill struct {
	requests                  map[string]int64
	wcu, rcu                  float64
	sqsUnits, schedules       int64
	invocations               int64
	ddbUSD, sqsUSD, lambdaUSD float64
	schedulerUSD              float64
}

func (m *awsMeter) bill(invocations int64) awsBill {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := awsBill{requests: map[string]int64{}, wcu: m.wcu, rcu: m.rcu, sqsUnits: m.sqsUnits, invocations: invocations}
	if m.images == nil { // nothing computed: bill what DynamoDB reported
		b.wcu = m.localWCU
	}
	for k, v := range m.requests {
		b.requests[k] = v
		if k == "Scheduler.CreateSchedule" {
			b.schedules += v // each schedule fires once
		}
	}
	b.ddbUSD = b.wcu*prices.DynamoDBWriteUnit + b.rcu*prices.DynamoDBReadUnit
	b.sqsUSD = float64(b.sqsUnits) * prices.SQSRequest
	b.schedulerUSD = float64(b.schedules) * prices.SchedulerInvocation
	b.lambdaUSD = float64(invocations) * (prices.LambdaRequest + lambdaMemoryGB*lambdaBilledDuration.Seconds()*prices.LambdaGBSecondArm)
	return b
}

func (b awsBill) total() float64 { return b.ddbUSD + b.sqsUSD + b.schedulerUSD + b.lambdaUSD }

func endpointOrSkip(b *testing.B, key string) string {
	v := os.Getenv(key)
	if v == "" {
		if os.Getenv("CI") == "true" {
			b.Fatalf("%s is unset but CI=true", key)
		}
		b.Skipf("%s is unset; run ./scripts/test --module bench to start the emulators", key)
	}
	return v
}

// CostChain is the costed workflow: N sequential steps that each add one.
type CostChain struct{}

// Run adds one n times, each in its own named durable step.
func (CostChain) Run(ctx workflow.Context, n int) (int, error) {
	v := 0
	for i := range n {
		var err error
		if v, err = workflow.Step(ctx, fmt.Sprintf("step-%d", i), addOne, v); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// BenchmarkAWSCost runs a 10-step (and a 3-step) workflow on the AWS World
// against DynamoDB Local and fauxqs, driven the way Lambda drives it (SQS
// batches handed to the Queue handler), and prices every request it makes.
func BenchmarkAWSCost(b *testing.B) {
	for _, steps := range []int{10, 3} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) { benchAWSCost(b, steps) })
	}
}

func benchAWSCost(b *testing.B, steps int) {
	ddbURL, sqsURL := endpointOrSkip(b, "DYNAMODB_ENDPOINT"), endpointOrSkip(b, "SQS_ENDPOINT")
	ctx := context.Background()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	b.Cleanup(tr.CloseIdleConnections)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 3, HTTPClient: &http.Client{Transport: tr}}
	plainDB := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ddbURL) })
	meter := newAWSMeter(plainDB)
	plainSQS := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(sqsURL) })
	cfg.APIOptions = append(cfg.APIOptions, meter.apply)
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(ddbURL) })
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(sqsURL) })

	name := fmt.Sprintf("cost%d-%d", steps, time.Now().UnixNano())
	if err := awsworld.CreateTable(ctx, plainDB, name); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = plainDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	q, err := plainSQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		b.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	b.Cleanup(func() {
		_, _ = plainSQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	ga, err := plainSQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		b.Fatal(err)
	}
	arn := ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]

	w, err := awsworld.New(awsworld.Config{TableName: name, QueueURL: url}, db, sq)
	if err != nil {
		b.Fatal(err)
	}
	// The benchmark polls its runs through an unmetered World.
	poll, err := awsworld.New(awsworld.Config{TableName: name, QueueURL: url}, plainDB, plainSQS)
	if err != nil {
		b.Fatal(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.FlushCache)
	handler := awsworld.Queue(w, client.Runner(workflow.Use(CostChain{})))

	var invocations int64
	b.ResetTimer()
	for range b.N {
		run, err := workflow.Start(ctx, client, CostChain{}, steps)
		if err != nil {
			b.Fatal(err)
		}
		// Lambda's event source mapping receives and deletes the messages:
		// those requests are billed SQS requests too.
		for {
			out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
			if err != nil {
				b.Fatal(err)
			}
			if len(out.Messages) > 0 {
				var ev events.SQSEvent
				for _, m := range out.Messages {
					ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
						Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: arn})
				}
				invocations++
				hctx, cancel := context.WithTimeout(ctx, time.Minute)
				resp, err := handler(hctx, ev)
				cancel()
				if err != nil || len(resp.BatchItemFailures) > 0 {
					b.Fatalf("handler: %v %+v", err, resp.BatchItemFailures)
				}
				entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
				}
				if _, err := sq.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
					b.Fatal(err)
				}
			}
			// Polling the run is the benchmark's own check, not part of the bill.
			r, err := poll.GetRun(ctx, run.ID())
			if err != nil {
				b.Fatal(err)
			}
			if r.Status.Terminal() {
				if r.Status != worlds.RunCompleted {
					b.Fatalf("run %s: %s", run.ID(), r.Status)
				}
				break
			}
		}
	}
	b.StopTimer()
	bill := meter.bill(invocations)
	if meter.err != nil {
		b.Fatal(meter.err)
	}
	total := float64(b.N * steps)
	b.ReportMetric(bill.total()/total*1e6, "usd/Msteps")
	b.ReportMetric(bill.ddbUSD/total*1e6, "ddb-usd/Msteps")
	b.ReportMetric(bill.sqsUSD/total*1e6, "sqs-usd/Msteps")
	b.ReportMetric(bill.lambdaUSD/total*1e6, "lambda-usd/Msteps")
	b.ReportMetric(bill.wcu/total, "wcu/step")
	b.ReportMetric(meter.localWCU/total, "ddblocal-wcu/step")
	b.ReportMetric(bill.rcu/total, "rcu/step")
	b.ReportMetric(meter.localRCU/total, "ddblocal-rcu/step")
	b.ReportMetric(float64(invocations)/total, "invocations/step")
	ops := make([]string, 0, len(bill.requests))
	for op := range bill.requests {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		b.ReportMetric(float64(bill.requests[op])/total, op+"/step")
	}
}
