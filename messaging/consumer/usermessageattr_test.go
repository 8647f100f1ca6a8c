package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
)

// UserMessageAttribute reads only the native SQS attributes: with raw
// delivery the published attribute is one, inside an SNS envelope it is
// not, though Attribute finds it in both cases.
func TestUserMessageAttribute(t *testing.T) {
	t.Parallel()
	for _, raw := range []bool{true, false} {
		t.Run(fmt.Sprint("raw=", raw), func(t *testing.T) {
			t.Parallel()
			fake := messagingtest.NewSQS()
			name := fmt.Sprint("userattrs-", raw)
			url, _ := fake.AddQueue(name)
			topic := "arn:aws:sns:us-east-1:000000000000:" + name
			s := messagingtest.NewSNS(fake)
			if raw {
				s.Subscribe(topic, url)
			} else {
				s.SubscribeEnvelope(topic, url)
			}
			if _, err := s.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var got string
			r := newRoute(t, name, func(_ context.Context, msg middleware.Message) error {
				mu.Lock()
				defer mu.Unlock()
				got = fmt.Sprint(msg.Attribute("tenant"), "|", msg.UserMessageAttribute("tenant"), "|", msg.UserMessageAttributes()["tenant"])
				return nil
			})
			c, err := consumer.New(fake, r)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, c, func() bool { return fake.Len(url) == 0 })
			mu.Lock()
			defer mu.Unlock()
			want := "acme||"
			if raw {
				want = "acme|acme|acme"
			}
			if got != want {
				t.Fatalf("Attribute|UserMessageAttribute|UserMessageAttributes = %q, want %q", got, want)
			}
		})
	}
}
