package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/examples/orders/fulfil"
	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/idempotency/memory"
	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowtest"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/aws/schedulertest"
)

// The program places both orders, the duplicate publish of A-100 included,
// and each ships once, charged once, with one notification each.
func TestLocalProgram(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, filepath.Join(t.TempDir(), "orders.db"), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"order A-100 shipped as parcel-A-100, charged 1 time(s): ch_A-100_3900_1",
		"order B-200 shipped as parcel-B-200, charged 1 time(s): ch_B-200_1250_1",
		`2 "order shipped" notifications`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// An order the warehouse never packs is released after 48 hours of virtual
// time and fails with ErrNotPacked's message.
func TestNotPackedInTime(t *testing.T) {
	t.Parallel()
	charges, err := idempotency.New(memory.New(), idempotency.Options{KeyPrefix: "c", EventKeyJMESPath: "stepKey"})
	if err != nil {
		t.Fatal(err)
	}
	inv := &fulfil.MemoryInventory{}
	env := workflowtest.New()
	wf := fulfil.Workflow{Inventory: inv, Payments: &fulfil.CountingPayments{}, Charges: charges, Publisher: nopPublisher{}, ShippedTopic: "arn:aws:sns:us-east-1:0:t"}
	run, err := workflowtest.Start(context.Background(), env, wf, fulfil.Order{ID: "C-1", Items: []string{"lamp"}, Cents: 100})
	if err != nil {
		t.Fatal(err)
	}
	// The run's error comes back from its log: by its message, not the sentinel.
	if _, err := run.Result(context.Background()); !errors.Is(err, workflow.ErrRunFailed) || !strings.Contains(err.Error(), fulfil.ErrNotPacked.Error()) {
		t.Fatalf("Result = %v, want the run failed with ErrNotPacked", err)
	}
	if got := env.Now().Sub(env.StartTime()); got != fulfil.PackTimeout || inv.Reserved("C-1") != nil {
		t.Fatalf("ended after %s with %v reserved; want %s and nothing", got, inv.Reserved("C-1"), fulfil.PackTimeout)
	}
}

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, *producer.PublishInput) (string, error) { return "m", nil }

// End to end on the emulators: the AWS World on DynamoDB Local, the charges'
// idempotency table there too, and SNS topics and SQS queues on fauxqs. An
// order published twice to the orders topic starts one run, the warehouse's
// message reaches it, and one "order shipped" message reaches the FIFO queue
// subscribed to the shipped topic.
func TestEndToEndOnEmulators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	db := dynamodb.New(testenv.DynamoDB(t).Options(), func(o *dynamodb.Options) { o.HTTPClient = hc })
	sq := sqs.New(testenv.SQS(t).Options(), func(o *sqs.Options) { o.HTTPClient = hc })
	sn := sns.New(testenv.SNS(t).Options(), func(o *sns.Options) { o.HTTPClient = hc })

	table := testenv.UniqueName(t, "orders")
	if err := awsworld.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	worldURL, worldARN := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "world"), false)
	// The 48-hour timer needs EventBridge Scheduler; schedulertest plays it.
	sched := schedulertest.New(sq, time.Now, func(arn string) (string, error) {
		if arn == worldARN {
			return worldURL, nil
		}
		return "", fmt.Errorf("unknown target %s", arn)
	})
	t.Cleanup(sched.Close)
	world, err := awsworld.New(awsworld.Config{TableName: table, QueueURL: worldURL, Scheduler: &awsworld.SchedulerConfig{
		Client:    scheduler.New(sched.Client(testenv.AWSConfig(t)).Options(), func(o *scheduler.Options) { o.HTTPClient = hc }),
		TargetARN: worldARN, RoleARN: "arn:aws:iam::000000000000:role/scheduler",
	}}, db, sq)
	if err != nil {
		t.Fatal(err)
	}
	idemTable := testenv.UniqueName(t, "charges")
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(idemTable), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, idemTable)
	store, err := idynamodb.New(db, idynamodb.Options{TableName: idemTable})
	if err != nil {
		t.Fatal(err)
	}
	charges, err := idempotency.New(store, idempotency.Options{KeyPrefix: "orders-charge", EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input"})
	if err != nil {
		t.Fatal(err)
	}

	subscribe := func(topic, queueARN string) {
		if _, err := sn.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN)}); err != nil {
			t.Fatal(err)
		}
	}
	ordersTopic := testenv.CreateTopic(t, sn, testenv.UniqueName(t, "orders"), false)
	ordersURL, ordersARN := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "orders"), false)
	subscribe(ordersTopic, ordersARN)
	warehouseURL, _ := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "warehouse"), false)
	shippedTopic := testenv.CreateTopic(t, sn, testenv.UniqueName(t, "shipped"), true)
	shippedURL, shippedARN := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "shipped"), true)
	subscribe(shippedTopic, shippedARN)

	pub, err := producer.New(sn)
	if err != nil {
		t.Fatal(err)
	}
	payments := &fulfil.CountingPayments{}
	wf := fulfil.Workflow{Inventory: &fulfil.MemoryInventory{}, Payments: payments, Charges: charges, Publisher: pub, ShippedTopic: shippedTopic}
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	onOrders, onWarehouse, err := fulfil.Handlers(client, wf)
	if err != nil {
		t.Fatal(err)
	}
	var routes []*router.Route
	for _, r := range []struct {
		url string
		h   func() (*router.Route, error)
	}{
		{ordersURL, func() (*router.Route, error) { return router.New(ordersURL, onOrders, router.WithWaitTimeSeconds(1)) }},
		{warehouseURL, func() (*router.Route, error) {
			return router.New(warehouseURL, onWarehouse, router.WithWaitTimeSeconds(1), router.WithVisibilityTimeout(1))
		}},
	} {
		route, err := r.h()
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, route)
	}
	b, err := broker.New(sq, routes, broker.WithLogger(logger.NewNoOp()))
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = client.Serve(sctx, workflow.Use(wf)) }()
	go func() { defer wg.Done(); _ = b.Run(sctx) }()
	t.Cleanup(func() { stop(); wg.Wait() })

	order, _ := json.Marshal(fulfil.Order{ID: "E-7", Items: []string{"desk"}, Cents: 19900})
	for range 2 {
		if _, err := pub.Publish(ctx, &producer.PublishInput{TopicARN: ordersTopic, Message: string(order)}); err != nil {
			t.Fatal(err)
		}
	}
	packed, _ := json.Marshal(fulfil.Packed{OrderID: "E-7", Parcel: "parcel-E-7"})
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(warehouseURL), MessageBody: aws.String(string(packed))}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	for _, err := client.GetRun(rctx, fulfil.RunID("E-7")); errors.Is(err, worlds.ErrRunNotFound); _, err = client.GetRun(rctx, fulfil.RunID("E-7")) {
		time.Sleep(20 * time.Millisecond)
	}
	shipped, err := workflow.Attach[fulfil.Shipped](client, fulfil.RunID("E-7")).Result(rctx)
	if err != nil {
		evs, _ := worlds.AllEvents(ctx, world, fulfil.RunID("E-7"))
		for _, ev := range evs {
			t.Logf("%d %s %s %v %s", ev.Seq, ev.Type, ev.CorrelationID, ev.ResumeAt, ev.CreatedAt)
		}
		t.Fatal(err)
	}
	if shipped.Parcel != "parcel-E-7" || payments.Calls("E-7") != 1 {
		t.Fatalf("shipped %+v after %d charges; want parcel-E-7, charged once", shipped, payments.Calls("E-7"))
	}
	runs, err := world.ListRuns(ctx, worlds.RunFilter{})
	if err != nil || len(runs.Items) != 1 {
		t.Fatalf("runs %+v, %v; want the order's one run", runs.Items, err)
	}
	got, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(shippedURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
	if err != nil || len(got.Messages) != 1 || !strings.Contains(aws.ToString(got.Messages[0].Body), "parcel-E-7") {
		t.Fatalf("shipped queue: %+v, %v; want the one notification", got, err)
	}
}
