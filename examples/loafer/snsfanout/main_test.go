package main

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/producer"
)

type recorder struct {
	mu     sync.Mutex
	orders []orderPlaced
	events []string
}

func (r *recorder) handler(ctx context.Context, msg middleware.Message) error {
	if err := handleOrder(ctx, msg); err != nil {
		return err
	}
	var o orderPlaced
	_ = msg.DecodeMessage(&o)
	r.mu.Lock()
	r.orders = append(r.orders, o)
	r.events = append(r.events, msg.Attribute("event_type"))
	r.mu.Unlock()
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.orders)
}

func publishAndConsume(t *testing.T, snsc producer.SNSClient, sqsc consumer.SQSClient, topicARN, queue string) *recorder {
	t.Helper()
	p, err := producer.New(snsc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(context.Background(), &producer.PublishInput{TopicARN: topicARN,
		Message: `{"order_id":"o-1","total":12.5}`, Attributes: map[string]string{"event_type": "order.placed"}}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, sqsc, queue, rec.handler) }()
	deadline := time.Now().Add(20 * time.Second)
	for rec.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.orders) != 1 || rec.orders[0].OrderID != "o-1" || rec.orders[0].Total != 12.5 || rec.events[0] != "order.placed" {
		t.Fatalf("orders %+v, event_type %v", rec.orders, rec.events)
	}
	return rec
}

// The envelope is unwrapped: DecodeMessage reads the published message and
// Attribute the envelope's attributes.
func TestRunUnwrapsEnvelope(t *testing.T) {
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue(queueName)
	s := messagingtest.NewSNS(fake)
	const topic = "arn:aws:sns:us-east-1:000000000000:orders"
	s.SubscribeEnvelope(topic, url)
	publishAndConsume(t, s, fake, topic, queueName)
}

// The same against the SNS/SQS emulator, with a subscription without raw
// message delivery.
func TestRunUnwrapsEnvelopeEmulator(t *testing.T) {
	if os.Getenv("SQS_ENDPOINT") == "" || os.Getenv("SNS_ENDPOINT") == "" {
		t.Skip("SQS_ENDPOINT/SNS_ENDPOINT not set (run through scripts/test)")
	}
	sqsc, snsc := testenv.SQS(t), testenv.SNS(t)
	topic := testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "fanout"), false)
	name := testenv.UniqueName(t, "fanout")
	url, arn := testenv.CreateQueue(t, sqsc, name, false)
	if _, err := snsc.Subscribe(context.Background(), &sns.SubscribeInput{TopicArn: aws.String(topic),
		Protocol: aws.String("sqs"), Endpoint: aws.String(arn)}); err != nil {
		t.Fatal(err)
	}
	publishAndConsume(t, snsc, sqsc, topic, url)
}
