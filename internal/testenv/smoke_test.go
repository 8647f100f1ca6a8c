package testenv_test

// Smoke tests against the real engines: each proves that the harness reaches a
// real service and that the service behaves as the packages above rely on.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/redis/go-redis/v9"

	"github.com/cairn-go/cairn/internal/testenv"
)

func createTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := testenv.UniqueName(t, "smoke")
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	testenv.DeleteTableOnCleanup(t, c, name)
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("wait for table: %v", err)
	}
	return name
}

func putIfAbsent(table, pk, v string) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: pk},
			"v":  &ddbtypes.AttributeValueMemberS{Value: v},
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}
}

func TestSmokeDynamoDBTransactWriteItems(t *testing.T) {
	t.Parallel()
	c := testenv.DynamoDB(t)
	table := createTable(t, c)
	ctx := t.Context()

	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{putIfAbsent(table, "a", "first")},
	}); err != nil {
		t.Fatalf("first transaction: %v", err)
	}

	// "b" alone would succeed; the failing condition on "a" must cancel it too.
	_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{putIfAbsent(table, "b", "new"), putIfAbsent(table, "a", "second")},
	})
	var cancelled *ddbtypes.TransactionCanceledException
	if !errors.As(err, &cancelled) {
		t.Fatalf("second transaction: err = %v, want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range cancelled.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if len(codes) != 2 || codes[1] != "ConditionalCheckFailed" || codes[0] == "ConditionalCheckFailed" {
		t.Fatalf("cancellation reasons = %q, want [None ConditionalCheckFailed]", codes)
	}

	for pk, want := range map[string]string{"a": "first", "b": ""} {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			Key:            map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatalf("get %q: %v", pk, err)
		}
		var got string
		if s, ok := out.Item["v"].(*ddbtypes.AttributeValueMemberS); ok {
			got = s.Value
		}
		if got != want {
			t.Errorf("item %q: v = %q, want %q", pk, got, want)
		}
	}
}

// receiveOne long-polls url until one message arrives or ctx ends.
func receiveOne(ctx context.Context, t *testing.T, c *sqs.Client, url string) (body, receipt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatalf("receive from %s: %v", url, err)
		}
		if len(out.Messages) == 1 {
			return aws.ToString(out.Messages[0].Body), aws.ToString(out.Messages[0].ReceiptHandle)
		}
	}
	t.Fatalf("no message on %s within 30s", url)
	return "", ""
}

func TestSmokeSQSFIFO(t *testing.T) {
	t.Parallel()
	c := testenv.SQS(t)
	ctx := t.Context()
	url, arn := testenv.CreateQueue(t, c, testenv.UniqueName(t, "smoke"), true)
	if arn == "" {
		t.Fatal("empty queue ARN")
	}

	for _, body := range []string{"one", "two"} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(url), MessageBody: aws.String(body),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(body),
		}); err != nil {
			t.Fatalf("send %q: %v", body, err)
		}
	}

	// FIFO order within a group: "two" is not delivered until "one" is deleted.
	for _, want := range []string{"one", "two"} {
		body, receipt := receiveOne(ctx, t, c, url)
		if body != want {
			t.Fatalf("received %q, want %q", body, want)
		}
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(receipt)}); err != nil {
			t.Fatalf("delete %q: %v", body, err)
		}
	}

	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1})
	if err != nil {
		t.Fatalf("final receive: %v", err)
	}
	if len(out.Messages) != 0 {
		t.Fatalf("queue not empty after deletes: %d message(s), first %q", len(out.Messages), aws.ToString(out.Messages[0].Body))
	}
}

func TestSmokeSNSToSQSFanOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  bool
	}{
		{"raw delivery", true},
		{"envelope", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sqsc, snsc := testenv.SQS(t), testenv.SNS(t)
			ctx := t.Context()
			topic := testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "smoke"), false)
			// Two subscribed queues: a fan-out reaches every one of them.
			var urls []string
			for range 2 {
				url, arn := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "smoke"), false)
				attrs := map[string]string{}
				if tc.raw {
					attrs["RawMessageDelivery"] = "true"
				}
				if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{
					TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(arn), Attributes: attrs,
				}); err != nil {
					t.Fatalf("subscribe %s: %v", arn, err)
				}
				urls = append(urls, url)
			}

			payload := `{"order":"42"}`
			if _, err := snsc.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(payload)}); err != nil {
				t.Fatalf("publish: %v", err)
			}

			for _, url := range urls {
				body, _ := receiveOne(ctx, t, sqsc, url)
				got := body
				if !tc.raw {
					var env struct{ Type, Message, TopicArn string }
					if err := json.Unmarshal([]byte(body), &env); err != nil {
						t.Fatalf("envelope %q: %v", body, err)
					}
					if env.Type != "Notification" || env.TopicArn != topic {
						t.Errorf("envelope Type=%q TopicArn=%q, want Notification %q", env.Type, env.TopicArn, topic)
					}
					got = env.Message
				}
				if got != payload {
					t.Errorf("queue %s got %q, want %q", url, got, payload)
				}
			}
		})
	}
}

func TestSmokeSetNXEX(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		addr func(testing.TB) string
	}{
		{"redis", testenv.RedisAddr},
		{"valkey", testenv.ValkeyAddr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := redis.NewClient(&redis.Options{Addr: tc.addr(t)})
			t.Cleanup(func() { _ = rdb.Close() })
			ctx := t.Context()
			key := testenv.UniqueName(t, "smoke") + ":lock"
			t.Cleanup(func() { rdb.Del(context.Background(), key) })

			const ttl = 30 * time.Second
			first, err := rdb.SetArgs(ctx, key, "owner-1", redis.SetArgs{Mode: "NX", TTL: ttl}).Result()
			if err != nil || first != "OK" {
				t.Fatalf("first SET NX EX = %q, %v; want OK", first, err)
			}
			// A refused SET NX answers nil, which go-redis reports as redis.Nil.
			second, err := rdb.SetArgs(ctx, key, "owner-2", redis.SetArgs{Mode: "NX", TTL: ttl}).Result()
			if !errors.Is(err, redis.Nil) {
				t.Fatalf("second SET NX EX = %q, %v; want redis.Nil", second, err)
			}
			if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "owner-1" {
				t.Fatalf("GET = %q, %v; want owner-1", v, err)
			}
			got, err := rdb.TTL(ctx, key).Result()
			if err != nil || got <= 0 || got > ttl {
				t.Fatalf("TTL = %v, %v; want in (0, %v]", got, err, ttl)
			}
		})
	}
}
