package producer_test

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
)

func Example() {
	ctx := context.Background()
	snsClient := messagingtest.NewSNS(nil) // *sns.Client in production
	p, _ := producer.New(snsClient,
		producer.WithGroupIDGenerator(idgen.NewKeyBased(idgen.WithFields("customer"))),
		producer.WithDeduplicationIDGenerator(idgen.NewRandom()))
	topic := producer.BuildTopicARN("us-east-1", "000000000000", "orders.fifo")

	_, err := p.Publish(ctx, &producer.PublishInput{TopicARN: topic, Message: `{"id":1}`,
		Attributes: map[string]string{"customer": "c-42"}})
	fmt.Println("single:", err)

	var entries []*producer.PublishBatchEntry
	for i := range 25 {
		entries = append(entries, &producer.PublishBatchEntry{Message: fmt.Sprint(i),
			Attributes: map[string]string{"customer": fmt.Sprint("c-", i%3)}})
	}
	res, err := p.PublishAll(ctx, topic, entries)
	if err != nil {
		panic(err)
	}
	fmt.Println("calls:", res.Calls, "failed:", len(res.Failed()))
	// Output:
	// single: <nil>
	// calls: 3 failed: 0
}
