package workflowmsg_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowmsg"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// On the AWS World (DynamoDB Local and the SQS emulator), an SQS-triggered
// Lambda batch handled by messaging/lambda starts one run per message, and the
// same batch delivered again (a failed invocation, an SQS duplicate) starts
// nothing more; an invalid message is the batch's only failure.
func TestStartOnAWSWorldThroughLambda(t *testing.T) {
	t.Parallel()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	db := dynamodb.New(testenv.DynamoDB(t).Options(), func(o *dynamodb.Options) { o.HTTPClient = hc })
	sq := sqs.New(testenv.SQS(t).Options(), func(o *sqs.Options) { o.HTTPClient = hc })
	ctx := context.Background()
	table := testenv.UniqueName(t, "wfmsg")
	if err := awsworld.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	url, _ := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "q"), false)
	w, err := awsworld.New(awsworld.Config{TableName: table, QueueURL: url}, db, sq)
	if err != nil {
		t.Fatal(err)
	}
	charges := &sync.Map{}
	wf := Fulfil{charges: charges}
	c, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(sctx, workflow.Use(wf)) }()
	t.Cleanup(func() { cancel(); <-done })

	start, err := workflowmsg.StartHandler(c, wf, workflowmsg.StartConfig[Order]{Prefix: "o-"})
	if err != nil {
		t.Fatal(err)
	}
	route, err := router.New("orders", start)
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambda.New([]*router.Route{route})
	if err != nil {
		t.Fatal(err)
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "aws-1", Body: `{"orderId":"E1","cents":100}`, EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
		{MessageId: "aws-2", Body: `{"orderId":"E2","cents":200}`, EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
		{MessageId: "aws-3", Body: `not json`, EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders", Attributes: map[string]string{"ApproximateReceiveCount": "1"}},
	}}
	for i := range 2 {
		resp, err := h.Handle(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		// Only the invalid message is reported as failed, which leaves it to the
		// queue's redrive policy (the dead-letter queue); the started ones are
		// acknowledged, on their redelivery too.
		if f := resp.BatchItemFailures; len(f) != 1 || f[0].ItemIdentifier != "aws-3" {
			t.Errorf("delivery %d: failures %+v, want aws-3 alone", i+1, f)
		}
	}
	for _, id := range []string{"aws-1", "aws-2"} {
		run := workflow.Attach[string](c, workflowmsg.RunID("o-", id))
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := run.Result(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("run of %s: %v", id, err)
		}
	}
	runs, err := w.ListRuns(ctx, worlds.RunFilter{})
	if err != nil || len(runs.Items) != 2 {
		t.Fatalf("runs %+v, %v; want two", runs.Items, err)
	}
	for _, id := range []string{"E1", "E2"} {
		if n, _ := charges.Load(id); n.(*atomic.Int32).Load() != 1 {
			t.Errorf("order %s charged %d times", id, n.(*atomic.Int32).Load())
		}
	}
}
