package producer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
)

const (
	stdTopic  = "arn:aws:sns:us-east-1:0:t"
	fifoTopic = "arn:aws:sns:us-east-1:0:t.fifo"
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
	if _, err := p.Publish(ctx, &producer.PublishInput{TopicARN: "t"}); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if _, err := p.PublishBatch(ctx, &producer.PublishBatchInput{}); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if _, err := p.PublishBatch(ctx, &producer.PublishBatchInput{Messages: make([]*producer.PublishBatchEntry, 11)}); !errors.Is(err, merrors.ErrMaxBatchSize) {
		t.Fatal(err)
	}
	if _, err := p.PublishAll(ctx, "t", nil); !errors.Is(err, merrors.ErrEmptyInput) {
		t.Fatal(err)
	}
	if got := producer.BuildTopicARN("us-east-1", "123", "orders.fifo"); got != "arn:aws:sns:us-east-1:123:orders.fifo" {
		t.Fatal(got)
	}
}

// recordingSNS remembers the group and deduplication IDs it was sent.
type recordingSNS struct {
	*messagingtest.SNS
	groups, dedups []string
}

func newRecording() *recordingSNS { return &recordingSNS{SNS: messagingtest.NewSNS(nil)} }

func (r *recordingSNS) Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error) {
	r.groups = append(r.groups, aws.ToString(in.MessageGroupId))
	r.dedups = append(r.dedups, aws.ToString(in.MessageDeduplicationId))
	return r.SNS.Publish(ctx, in, opts...)
}

func (r *recordingSNS) ids(t *testing.T, p *producer.Producer, in *producer.PublishInput) (string, string) {
	t.Helper()
	r.groups, r.dedups = nil, nil
	if _, err := p.Publish(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	return r.groups[0], r.dedups[0]
}

// The generators see the attributes only, never the body (defect: the body
// was a field, so equal attributes with different bodies got different
// groups, and NewComposite made 229-character group IDs).
func TestGeneratorsSeeAttributesNotBody(t *testing.T) {
	t.Parallel()
	rec := newRecording()
	s := rec
	p, _ := producer.New(s, producer.WithGroupIDGenerator(idgen.NewKeyBased()),
		producer.WithDeduplicationIDGenerator(idgen.NewComposite()))
	attrs := map[string]string{"tenant_id": "acme", "order_id": "o-42"}
	g1, d1 := rec.ids(t, p, &producer.PublishInput{TopicARN: fifoTopic, Message: "first body", Attributes: attrs})
	g2, d2 := rec.ids(t, p, &producer.PublishInput{TopicARN: fifoTopic, Message: strings.Repeat("a much longer body ", 10), Attributes: attrs})
	if g1 != g2 || d1 != d2 {
		t.Fatalf("equal attributes, different IDs: groups %q %q, dedups %q %q", g1, g2, d1, d2)
	}
	want, _ := idgen.NewKeyBased().Generate(context.Background(), attrs)
	if g1 != want || d1 != "o-42:acme" {
		t.Fatalf("group %q want %q; dedup %q want o-42:acme", g1, want, d1)
	}
	// Asked for explicitly, the body is a field.
	pb, _ := producer.New(s, producer.WithGroupIDGenerator(idgen.NewComposite(idgen.WithFields("tenant_id", "body"))),
		producer.WithBodyField("body"))
	if g, _ := rec.ids(t, pb, &producer.PublishInput{TopicARN: fifoTopic, Message: "b1", Attributes: attrs}); g != "acme:b1" {
		t.Fatalf("group %q", g)
	}
	// Explicit IDs win, and standard topics never get generated ones.
	if g, d := rec.ids(t, p, &producer.PublishInput{TopicARN: fifoTopic, Message: "x", Attributes: attrs,
		GroupID: "mine", DeduplicationID: "d"}); g != "mine" || d != "d" {
		t.Fatalf("explicit ids replaced: %q %q", g, d)
	}
	if g, d := rec.ids(t, p, &producer.PublishInput{TopicARN: stdTopic, Message: "x", Attributes: attrs}); g != "" || d != "" {
		t.Fatalf("standard topic got ids %q %q", g, d)
	}
}

func TestFIFOFanOutAndBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := messagingtest.NewSQS()
	std, _ := fake.AddQueue("std")
	fifo, _ := fake.AddQueue("ord.fifo")
	s := messagingtest.NewSNS(fake)
	s.Subscribe(stdTopic, std)
	s.Subscribe(fifoTopic, fifo)
	p, _ := producer.New(s, producer.WithGroupIDGenerator(idgen.NewKeyBased(idgen.WithFields("order"))),
		producer.WithDeduplicationIDGenerator(idgen.NewRandom()))
	attrs := map[string]string{"order": "o1"}
	if _, err := p.Publish(ctx, &producer.PublishInput{TopicARN: fifoTopic, Message: "a", Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, &producer.PublishInput{TopicARN: stdTopic, Message: "b", Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
	out, err := p.PublishBatch(ctx, &producer.PublishBatchInput{TopicARN: fifoTopic, Messages: []*producer.PublishBatchEntry{
		{ID: "1", Message: "c", Attributes: attrs}, {ID: "2", Message: "d", Attributes: attrs},
	}})
	if err != nil || len(out.Successful) != 2 || len(out.Failed) != 0 || out.Successful[0].EntryID != "1" || out.Successful[0].MessageID == "" {
		t.Fatalf("batch %+v %v", out, err)
	}
	if fake.Len(fifo) != 3 || fake.Len(std) != 1 {
		t.Fatalf("fan-out fifo=%d std=%d", fake.Len(fifo), fake.Len(std))
	}
	// A rejected entry is reported per entry with SNS's code and message.
	s.Reject = func(body string) bool { return body == "bad" }
	out, err = p.PublishBatch(ctx, &producer.PublishBatchInput{TopicARN: stdTopic, Messages: []*producer.PublishBatchEntry{
		{ID: "ok", Message: "fine"}, {ID: "no", Message: "bad"},
	}})
	var ee *producer.EntryError
	if err != nil || len(out.Failed) != 1 || out.Failed[0].EntryID != "no" || !errors.As(out.Failed[0].Err, &ee) {
		t.Fatalf("batch %+v %v", out, err)
	}
}

// PublishAll splits by 10 entries and by 256 KB and reports each entry.
func TestPublishAllSplitsAndReportsPerEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := messagingtest.NewSNS(nil)
	s.Reject = func(body string) bool { return strings.HasPrefix(body, "bad") }
	p, _ := producer.New(s)
	var entries []*producer.PublishBatchEntry
	for i := range 23 {
		body := fmt.Sprint("ok", i)
		if i == 4 || i == 17 {
			body = fmt.Sprint("bad", i)
		}
		entries = append(entries, &producer.PublishBatchEntry{Message: body})
	}
	big := strings.Repeat("x", 100*1024)
	for range 5 {
		entries = append(entries, &producer.PublishBatchEntry{Message: big})
	}
	entries = append(entries, &producer.PublishBatchEntry{Message: strings.Repeat("y", 257*1024)})
	res, err := p.PublishAll(ctx, stdTopic, entries)
	if err != nil {
		t.Fatal(err)
	}
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
