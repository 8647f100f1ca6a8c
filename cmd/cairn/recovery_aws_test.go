package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// The runbook's commands on DynamoDB Local and the SQS emulator: a delivery
// whose message landed in the dead-letter queue is moved back by cairn redrive,
// and cairn sweep runs against the same World from the same variables.
func TestRedriveAndSweepOnTheAWSWorld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb, sqsc := testenv.DynamoDB(t), testenv.SQS(t)
	table := testenv.UniqueName(t, "redrive")
	if err := awsworld.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, ddb, table)
	queueURL, _ := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "redrive"), false)
	dlqURL, _ := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "redrive-dlq"), false)
	w, err := awsworld.New(awsworld.Config{TableName: table, QueueURL: queueURL}, ddb, sqsc)
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "deploy.Approval", RunID: "run-dlq"}, worlds.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What SQS does after max_receive_count failures: the message moves to the DLQ.
	got, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 2})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %v %v", got, err)
	}
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: got.Messages[0].Body}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}

	env := map[string]string{"WORKFLOW_TABLE": table, "WORKFLOW_QUEUE_URL": queueURL}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	var out bytes.Buffer
	if err := redriveErr(ctx, []string{"--aws", "--dlq", dlqURL, "--json"}, &out, getenv); err != nil {
		t.Fatalf("redrive: %v", err)
	}
	var res awsworld.RedriveResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Moved) != 1 || res.Moved[0] != id {
		t.Fatalf("redrive printed %s (%v), want %s moved", out.Bytes(), err, id)
	}
	back, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 2})
	if err != nil || len(back.Messages) != 1 || !strings.Contains(aws.ToString(back.Messages[0].Body), id) {
		t.Fatalf("the delivery is not back on its queue: %v %v", back, err)
	}

	out.Reset()
	if err := sweepErr(ctx, []string{"--dry-run"}, &out, getenv); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if !strings.Contains(out.String(), "would send again") {
		t.Errorf("sweep printed %q", out.String())
	}
	out.Reset()
	if err := sweepErr(ctx, []string{"--dry-run", "--index-legacy"}, &out, getenv); err != nil {
		t.Fatalf("sweep --index-legacy: %v", err)
	}
	if !strings.Contains(out.String(), "0 legacy queue records indexed") || !strings.Contains(out.String(), "runs indexed") || !strings.Contains(out.String(), "would send again") {
		t.Errorf("sweep --index-legacy printed %q", out.String())
	}
	if err := redriveErr(ctx, []string{"--aws"}, &out, getenv); err == nil {
		t.Error("redrive without --dlq succeeded")
	}
}
