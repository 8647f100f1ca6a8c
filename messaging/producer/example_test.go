package producer_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/cairn-go/cairn/messaging/idgen"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/producer"
)

func Example() {
	ctx := context.Background()
	snsClient := messagingtest.NewSNS(nil) // *sns.Client in production
	groups, _ := idgen.NewKeyBased(idgen.WithFields("customer"))
	p, _ := producer.New(snsClient,
		producer.WithGroupIDGenerator(groups),
		producer.WithDeduplicationIDGenerator(idgen.NewRandom()))
	topic := producer.BuildTopicARN("us-east-1", "000000000000", "orders.fifo")

	_, err := p.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"id":1}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"customer": {DataType: aws.String("String"), StringValue: aws.String("c-42")}}})
	fmt.Println("single:", err)

	var entries []types.PublishBatchRequestEntry
	for i := range 25 {
		entries = append(entries, types.PublishBatchRequestEntry{Message: aws.String(fmt.Sprint(i)),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"customer": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("c-", i%3))}}})
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
