// Command publish publishes to a standard and a FIFO SNS topic, one message
// and in batches, with FIFO IDs generated from the attributes. It is written
// against loafer-awsx's API: only the import paths name cairn.
package main

import (
	"context"
	"log"
	"time"

	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/producer"
)

const (
	region    = "us-east-1"
	accountID = "000000000000"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cfg, err := conn.New(ctx,
		conn.WithRegion(region),
		conn.WithAccessKey("test", "test"),
		conn.WithEndpoint("http://localhost:4566"),
	)
	if err != nil {
		log.Fatalf("aws config: %v", err)
	}
	standard := producer.BuildTopicARN(region, accountID, "example-events")
	fifo := producer.BuildTopicARN(region, accountID, "example-orders.fifo")
	snsClient, err := client.NewSNS(ctx, cfg, client.WithPingTimeout(5*time.Second))
	if err != nil {
		log.Fatalf("sns: %v", err)
	}
	if err := run(ctx, snsClient, standard, fifo); err != nil {
		log.Fatal(err)
	}
}

// run publishes the example messages.
func run(ctx context.Context, client producer.SNSClient, standardARN, fifoARN string) error {
	// Orders of one tenant and order share a group; every message gets its
	// own deduplication ID.
	p, err := producer.New(client,
		producer.WithGroupIDGenerator(idgen.NewKeyBased(idgen.WithFields("tenant_id", "order_id"))),
		producer.WithDeduplicationIDGenerator(idgen.NewRandom()),
	)
	if err != nil {
		return err
	}
	id, err := p.Publish(ctx, &producer.PublishInput{
		TopicARN:   standardARN,
		Message:    `{"id":"u-1","text":"user created"}`,
		Attributes: map[string]string{"event_type": "user.created"},
	})
	if err != nil {
		return err
	}
	log.Printf("published %s", id)

	out, err := p.PublishBatch(ctx, &producer.PublishBatchInput{
		TopicARN: standardARN,
		Messages: []*producer.PublishBatchEntry{
			{ID: "1", Message: `{"id":"u-1","text":"user updated"}`, Attributes: map[string]string{"event_type": "user.updated"}},
			{ID: "2", Message: `{"id":"u-2","text":"user deleted"}`, Attributes: map[string]string{"event_type": "user.deleted"}},
		},
	})
	if err != nil {
		return err
	}
	report(out)

	order := map[string]string{"tenant_id": "acme", "order_id": "o-42"}
	if _, err := p.Publish(ctx, &producer.PublishInput{TopicARN: fifoARN, Message: `{"event":"order.placed"}`, Attributes: order}); err != nil {
		return err
	}
	out, err = p.PublishBatch(ctx, &producer.PublishBatchInput{
		TopicARN: fifoARN,
		Messages: []*producer.PublishBatchEntry{
			{ID: "1", Message: `{"event":"order.item_added","sku":"abc"}`, Attributes: order},
			{ID: "2", Message: `{"event":"order.item_added","sku":"xyz"}`, Attributes: order},
		},
	})
	if err != nil {
		return err
	}
	report(out)
	return nil
}

func report(out *producer.PublishBatchOutput) {
	for _, s := range out.Successful {
		log.Printf("entry %s published as %s", s.EntryID, s.MessageID)
	}
	for _, f := range out.Failed {
		log.Printf("entry %s failed: %v", f.EntryID, f.Err)
	}
}
