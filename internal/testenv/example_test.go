package testenv_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
)

// An integration test asks testenv for a client, makes resources with unique
// names and lets t.Cleanup remove them, so it can run in parallel with others.
func Example() {
	_ = func(t *testing.T) {
		t.Parallel()
		c := testenv.SQS(t) // skips when SQS_ENDPOINT is unset, fails on CI
		url, _ := testenv.CreateQueue(t, c, testenv.UniqueName(t, "orders"), true)
		_, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{
			QueueUrl: aws.String(url), MessageBody: aws.String("hello"),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("1"),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
