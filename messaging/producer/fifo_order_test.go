package producer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
)

// On a FIFO topic an entry that fails must hold back the later entries of
// its message group: publishing them anyway puts them ahead of the failed
// one, which the caller can only publish again after them. Here the first
// entry of group g1 is too large to send; the second g1 entry must not be
// published, while group g2 is unaffected. Checked on the emulator.
func TestEmulatorPublishAllFIFOFailedEntryHoldsItsGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	snsc, sqsc := testenv.SNS(t), testenv.SQS(t)
	topic := testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "order"), true)
	url, arn := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "ordersub"), true)
	if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(arn), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	p, _ := producer.New(snsc)
	entries := []*producer.PublishBatchEntry{
		{Message: strings.Repeat("x", producer.MaxBatchBytes+1), GroupID: "g1", DeduplicationID: "d0"},
		{Message: "g1-second", GroupID: "g1", DeduplicationID: "d1"},
		{Message: "g2-first", GroupID: "g2", DeduplicationID: "d2"},
	}
	res, err := p.PublishAll(ctx, topic, entries)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Results[0].Err, merrors.ErrEntryTooLarge) {
		t.Fatalf("entry 0: %v, want ErrEntryTooLarge", res.Results[0].Err)
	}
	if !errors.Is(res.Results[1].Err, merrors.ErrGroupBlocked) {
		t.Fatalf("entry 1 (g1 after a failed g1 entry): err %v, message ID %q; want ErrGroupBlocked and nothing published",
			res.Results[1].Err, res.Results[1].MessageID)
	}
	if res.Results[2].Err != nil {
		t.Fatalf("entry 2 (other group): %v", res.Results[2].Err)
	}
	// g2-first and anything published in the same call arrive together.
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body))
		}
	}
	for _, b := range got {
		if b == "g1-second" {
			t.Fatalf("received %v: g1-second was published ahead of the failed g1 entry", got)
		}
	}
}

// failingFirstCall fails the first PublishBatch call as a whole (a throttle)
// and passes the rest to the fake.
type failingFirstCall struct {
	*messagingtest.SNS
	calls int
}

func (f *failingFirstCall) PublishBatch(ctx context.Context, in *sns.PublishBatchInput, opts ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	f.calls++
	if f.calls == 1 {
		return nil, errors.New("throttled")
	}
	return f.SNS.PublishBatch(ctx, in, opts...)
}

// A whole failed call fails every entry in it; a later request must not
// publish the same groups' later entries ahead of them.
func TestPublishAllFIFOFailedCallHoldsItsGroups(t *testing.T) {
	t.Parallel()
	f := &failingFirstCall{SNS: messagingtest.NewSNS(nil)}
	p, _ := producer.New(f)
	var entries []*producer.PublishBatchEntry
	for i := range 12 {
		g := "a"
		if i%2 == 1 {
			g = "b"
		}
		if i == 11 {
			g = "c" // a group with nothing in the failed call
		}
		entries = append(entries, &producer.PublishBatchEntry{Message: "m", GroupID: g, DeduplicationID: string(rune('A' + i))})
	}
	res, err := p.PublishAll(context.Background(), fifoTopic, entries)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 2 {
		t.Fatalf("%d calls, want 2", f.calls)
	}
	if e := res.Results[10].Err; !errors.Is(e, merrors.ErrGroupBlocked) {
		t.Fatalf("entry 10 (group a, after the failed call): err %v, message ID %q; want ErrGroupBlocked",
			e, res.Results[10].MessageID)
	}
	if e := res.Results[11].Err; e != nil {
		t.Fatalf("entry 11 (group c): %v", e)
	}
}
