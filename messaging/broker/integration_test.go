package broker_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/broker"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/messaging/typed"
)

type event struct {
	Seq int `json:"seq"`
}

// TestEmulatorEndToEnd publishes typed events to a FIFO SNS topic fanned out
// to two FIFO queues, and consumes both through one broker with typed
// handlers, checking each queue sees every event once and in order.
func TestEmulatorEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	snsc, sqsc := testenv.SNS(t), testenv.SQS(t)
	topic := testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "e2e"), true)
	var urls []string
	for _, name := range []string{"billing", "shipping"} {
		url, arn := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, name), true)
		if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
			Endpoint: aws.String(arn), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, url)
	}
	p, _ := producer.New(snsc)
	tp := typed.NewProducer(p, typed.JSONCodec[event]{})
	const n = 15
	for i := range n {
		if _, err := tp.Publish(ctx, topic, event{Seq: i}, typed.WithGroupID("g"), typed.WithDeduplicationID(fmt.Sprint("d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string][]int{}
	var routes []*router.Route
	for _, url := range urls {
		r, err := router.New(url, typed.WrapHandler(typed.JSONCodec[event]{}, func(_ context.Context, e event) error {
			mu.Lock()
			seen[url] = append(seen[url], e.Seq)
			mu.Unlock()
			return nil
		}), router.WithRunMode(router.PerGroupID), router.WithWaitTimeSeconds(1))
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, r)
	}
	b, err := broker.New(sqsc, routes, broker.WithLogger(logger.NewNoOp()))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- b.Run(runCtx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := len(seen[urls[0]]) >= n && len(seen[urls[1]]) >= n
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	for _, url := range urls {
		if !slices.Equal(seen[url], want) {
			t.Fatalf("%s saw %v", url, seen[url])
		}
	}
}
