// Command producer publishes single and batched messages to SNS topics.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-go/cairn/messaging/conn"
	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/typed"
)

type Order struct {
	ID string `json:"id"`
}

func main() {
	log := logger.New()
	if err := run(context.Background(), log); err != nil {
		log.Error("producer", slog.Any("error", err))
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	opts := []conn.Option{conn.WithRegion(envOr("AWS_REGION", "us-east-1"))}
	if k := os.Getenv("AWS_ACCESS_KEY_ID"); k != "" {
		opts = append(opts, conn.WithAccessKey(k, os.Getenv("AWS_SECRET_ACCESS_KEY")))
	}
	if e := os.Getenv("SNS_ENDPOINT"); e != "" {
		opts = append(opts, conn.WithEndpoint(e))
	}
	cfg, err := conn.New(ctx, opts...)
	if err != nil {
		return err
	}
	client := sns.NewFromConfig(cfg)
	std, err := client.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("cairn-example-events")})
	if err != nil {
		return err
	}
	fifo, err := client.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("cairn-example-orders.fifo"),
		Attributes: map[string]string{"FifoTopic": "true"}})
	if err != nil {
		return err
	}
	groups := idgen.NewKeyBased(idgen.WithFields("tenant"), idgen.WithHashAlgorithm(idgen.FNV64))
	p, err := producer.New(client, producer.WithGroupIDGenerator(groups),
		producer.WithDeduplicationIDGenerator(idgen.NewRandom()))
	if err != nil {
		return err
	}
	id, err := p.Publish(ctx, &producer.PublishInput{TopicARN: *std.TopicArn, Message: "hello"})
	if err != nil {
		return err
	}
	log.Info("published", slog.String("id", id))

	orders := typed.NewProducer(p, typed.JSONCodec[Order]{})
	if _, err := orders.Publish(ctx, *fifo.TopicArn, Order{ID: "o-1"}, typed.WithGroupID("tenant-a")); err != nil {
		return err
	}

	var entries []*producer.PublishBatchEntry
	for i := range 25 {
		entries = append(entries, &producer.PublishBatchEntry{Message: fmt.Sprint("event ", i),
			Attributes: map[string]string{"tenant": fmt.Sprint("tenant-", i%3)}})
	}
	res, err := p.PublishAll(ctx, *fifo.TopicArn, entries)
	if err != nil {
		return err
	}
	for _, f := range res.Failed() {
		log.Error("entry failed", slog.Int("index", f.Index), slog.Any("error", f.Err))
	}
	log.Info("batch published", slog.Int("entries", len(entries)), slog.Int("calls", res.Calls))
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
