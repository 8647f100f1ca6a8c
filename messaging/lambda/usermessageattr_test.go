package lambda_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/messaging/lambda"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// A record's native SQS attributes are its user message attributes; the
// attributes of an SNS envelope in its body are not.
func TestUserMessageAttribute(t *testing.T) {
	t.Parallel()
	var got string
	r, err := router.New("attrs", func(_ context.Context, m middleware.Message) error {
		got = fmt.Sprint(m.UserMessageAttribute("tenant"), "|", m.UserMessageAttribute("env"), "|", len(m.UserMessageAttributes()), "|", m.Attribute("env"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambda.New([]*router.Route{r})
	if err != nil {
		t.Fatal(err)
	}
	in := rec("attrs", "a1", `{"Type":"Notification","MessageId":"n","TopicArn":"arn:aws:sns:us-east-1:0:t","Message":"m","MessageAttributes":{"env":{"Type":"String","Value":"prod"}}}`, "")
	in.MessageAttributes = map[string]events.SQSMessageAttribute{
		"tenant": {DataType: "String", StringValue: aws.String("acme")},
		"blob":   {DataType: "Binary", BinaryValue: []byte{1}},
	}
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{in}}); err != nil {
		t.Fatal(err)
	}
	if want := "acme||1|prod"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
