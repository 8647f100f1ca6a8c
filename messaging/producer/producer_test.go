package producer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
)

func TestValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := producer.New(nil); !errors.Is(err, merrors.ErrNoSNSClient) {
		t.Fatal(err)
	}
	p, _ := producer.New(messagingtest.NewSNS(nil))
	if _, err := p.Publish(ctx, nil); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, &sns.PublishInput{TopicArn: aws.String("t")}); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if _, err := p.PublishBatch(ctx, &sns.PublishBatchInput{}); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if _, err := p.PublishBatch(ctx, &sns.PublishBatchInput{PublishBatchRequestEntries: make([]types.PublishBatchRequestEntry, 11)}); !errors.Is(err, merrors.ErrMaxBatchSize) {
		t.Fatal(err)
	}
	if _, err := p.PublishAll(ctx, "t", nil); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if got := producer.BuildTopicARN("us-east-1", "123", "orders.fifo"); got != "arn:aws:sns:us-east-1:123:orders.fifo" {
		t.Fatal(got)
	}
}

func TestFIFOIDGeneration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := messagingtest.NewSQS()
	std, _ := fake.AddQueue("std")
	fifo, _ := fake.AddQueue("ord.fifo")
	s := messagingtest.NewSNS(fake)
	s.Subscribe("arn:aws:sns:us-east-1:0:t", std)
	s.Subscribe("arn:aws:sns:us-east-1:0:t.fifo", fifo)
	key, _ := idgen.NewKeyBased(idgen.WithFields("order"))
	p, _ := producer.New(s, producer.WithGroupIDGenerator(key), producer.WithDeduplicationIDGenerator(idgen.NewRandom()))
	attrs := map[string]types.MessageAttributeValue{"order": {DataType: aws.String("String"), StringValue: aws.String("o1")}}
	in := &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:0:t.fifo"), Message: aws.String("a"), MessageAttributes: attrs}
	if _, err := p.Publish(ctx, in); err != nil {
		t.Fatal(err)
	}
	if in.MessageGroupId != nil {
		t.Fatal("Publish modified its input")
	}
	// Standard topics never get generated IDs (SNS would reject them).
	if _, err := p.Publish(ctx, &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:0:t"), Message: aws.String("b"), MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}
	if fake.Len(fifo) != 1 || fake.Len(std) != 1 {
		t.Fatalf("fan-out fifo=%d std=%d", fake.Len(fifo), fake.Len(std))
	}
}

// PublishAll splits by 10 entries and by 256 KB and reports each entry.
func TestPublishAllSplitsAndReportsPerEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := messagingtest.NewSNS(nil)
	s.Reject = func(body string) bool { return strings.HasPrefix(body, "bad") }
	p, _ := producer.New(s)
	var entries []types.PublishBatchRequestEntry
	for i := range 23 {
		body := fmt.Sprint("ok", i)
		if i == 4 || i == 17 {
			body = fmt.Sprint("bad", i)
		}
		entries = append(entries, types.PublishBatchRequestEntry{Message: aws.String(body)})
	}
	big := strings.Repeat("x", 100*1024)
	for range 5 {
		entries = append(entries, types.PublishBatchRequestEntry{Message: aws.String(big)})
	}
	entries = append(entries, types.PublishBatchRequestEntry{Message: aws.String(strings.Repeat("y", 257*1024))})
	res, err := p.PublishAll(ctx, "arn:aws:sns:us-east-1:0:t", entries)
	if err != nil {
		t.Fatal(err)
	}
	// 23 small: 3 calls (10, 10, 3 — the 3 joined by two 100 KB entries),
	// then 100 KB entries at most 2 per call.
	if len(res.Results) != len(entries) {
		t.Fatalf("%d results", len(res.Results))
	}
	failed := res.Failed()
	if len(failed) != 3 || failed[0].Index != 4 || failed[1].Index != 17 || failed[2].Index != 28 {
		t.Fatalf("failed %+v", failed)
	}
	var ee *producer.EntryError
	if !errors.As(failed[0].Err, &ee) || !errors.Is(failed[2].Err, merrors.ErrEntryTooLarge) {
		t.Fatalf("errors %v / %v", failed[0].Err, failed[2].Err)
	}
	for _, r := range res.Results {
		if r.Err == nil && r.MessageID == "" {
			t.Fatalf("entry %d has neither ID nor error", r.Index)
		}
	}
	if res.Calls != s.Calls("PublishBatch") || res.Calls < 5 {
		t.Fatalf("calls %d / %d", res.Calls, s.Calls("PublishBatch"))
	}
}
