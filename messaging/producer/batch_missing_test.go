package producer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
)

// droppingSNS answers PublishBatch for the first entry only, reporting the
// others neither as published nor as failed.
type droppingSNS struct{ *messagingtest.SNS }

func (droppingSNS) PublishBatch(_ context.Context, in *sns.PublishBatchInput, _ ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	return &sns.PublishBatchOutput{Successful: []types.PublishBatchResultEntry{
		{Id: in.PublishBatchRequestEntries[0].Id, MessageId: aws.String("mid-0")},
	}}, nil
}

// Every entry of PublishBatch is in the output, as published or as failed:
// an entry the response does not mention was not confirmed, and leaving it
// out of Failed let a caller that checks Failed take it as published.
func TestPublishBatchReportsUnansweredEntries(t *testing.T) {
	t.Parallel()
	p, _ := producer.New(droppingSNS{messagingtest.NewSNS(nil)})
	out, err := p.PublishBatch(context.Background(), &producer.PublishBatchInput{TopicARN: stdTopic, Messages: []*producer.PublishBatchEntry{
		{ID: "a", Message: "1"}, {ID: "b", Message: "2"}, {ID: "c", Message: "3"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 1 || out.Successful[0].EntryID != "a" {
		t.Fatalf("successful %+v", out.Successful)
	}
	var ee *producer.EntryError
	if len(out.Failed) != 2 || out.Failed[0].EntryID != "b" || out.Failed[1].EntryID != "c" || !errors.As(out.Failed[0].Err, &ee) {
		t.Fatalf("failed %+v: the unanswered entries b and c must be reported as failed", out.Failed)
	}
}
