package awsworld_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// resentUpdateDB plays the SDK's retry of an update whose answer was lost: the
// first update of a queue record whose expression contains match commits, and
// is sent again; the second sending's answer, a failed condition, is returned.
type resentUpdateDB struct {
	*dynamodb.Client
	match string
	mu    sync.Mutex
	sent  int
}

func (d *resentUpdateDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := d.Client.UpdateItem(ctx, in, opts...)
	if err != nil || !strings.HasPrefix(sk(in.Key), "META") || !strings.HasPrefix(pkOf(in.Key), "QUEUE#") || !strings.Contains(aws.ToString(in.UpdateExpression), d.match) {
		return out, err
	}
	d.mu.Lock()
	d.sent++
	resend := d.sent == 1
	d.mu.Unlock()
	if !resend {
		return out, err
	}
	return d.Client.UpdateItem(ctx, in, opts...)
}

func pkOf(item map[string]ddbAttr) string { return item["pk"].(*ddbtypes.AttributeValueMemberS).Value }

// A queue record written, its answer lost and the write sent again, still gets
// its message: the record the second sending finds is the first's, not a
// delivery already on its way.
func TestQueueRecordWriteSentAgainSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	db := &resentUpdateDB{Client: e.db, match: "REMOVE"}
	w, err := awsworld.New(e.cfg, db, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Queue(context.Background(), worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "r1"}, worlds.QueueOptions{ID: "start-r1"}); err != nil {
		t.Fatal(err)
	}
	if db.sent != 1 {
		t.Fatalf("%d record writes, want 1 (sent twice)", db.sent)
	}
	if ids := queuedIDs(t, e, e.url); len(ids) != 1 || ids[0] != "start-r1" {
		t.Fatalf("queued %v, want [start-r1]", ids)
	}
}

// A claim of a queue record that committed, lost its answer and was sent
// again is this receiver's: the delivery runs now, not once the lease it
// holds itself runs out.
func TestClaimSentAgainRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, err := e.w.Queue(context.Background(), worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "r1"}, worlds.QueueOptions{ID: "start-r1"}); err != nil {
		t.Fatal(err)
	}
	db := &resentUpdateDB{Client: e.db, match: "ADD"}
	w, err := awsworld.New(e.cfg, db, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	r := &countingRunner{}
	ctx := context.Background()
	out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.url), MaxNumberOfMessages: 1, WaitTimeSeconds: 5})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %d messages, %v", len(out.Messages), err)
	}
	m := out.Messages[0]
	resp, err := awsworld.Queue(w, r)(ctx, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), EventSourceARN: e.arn, EventSource: "aws:sqs",
	}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler = %+v, %v; want the delivery run", resp, err)
	}
	if db.sent != 1 || r.ran.Load() != 1 {
		t.Fatalf("%d claims, %d executions; want 1 claim (sent twice) and 1 execution", db.sent, r.ran.Load())
	}
}

// A sweep's re-stamp of an overdue record, its answer lost and sent again,
// still sends the message: the record the second sending finds is the one the
// first re-stamped.
func TestSweepRestampSentAgainSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	queueUnsent(t, e, "r1")
	e.clock.Advance(awsworld.DefaultLease + 5*time.Second)
	db := &resentUpdateDB{Client: e.db, match: "SET #p = :now"}
	w, err := awsworld.New(e.cfg, db, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	var swept awsworld.SweepResult
	waitFor(t, "the sweep to see the overdue record", func() bool {
		if swept, err = w.Sweep(ctx, awsworld.SweepOptions{}); err != nil {
			t.Fatal(err)
		}
		return swept.Overdue > 0
	})
	if len(swept.Resent) != 1 || db.sent != 1 {
		t.Fatalf("sweep = %+v after %d re-stamps; want start-r1 sent after 1 (sent twice)", swept, db.sent)
	}
	if ids := queuedIDs(t, e, e.url); len(ids) != 1 || ids[0] != "start-r1" {
		t.Fatalf("queued %v, want [start-r1]", ids)
	}
}
