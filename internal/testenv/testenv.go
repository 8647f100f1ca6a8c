package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Environment variable names read by this package.
const (
	EnvDynamoDB = "DYNAMODB_ENDPOINT"
	EnvSQS      = "SQS_ENDPOINT"
	EnvSNS      = "SNS_ENDPOINT"
	EnvRedis    = "REDIS_ADDR"
	EnvValkey   = "VALKEY_ADDR"
)

// DefaultRegion is used when AWS_REGION is unset.
const DefaultRegion = "us-east-1"

// cleanupTimeout bounds each cleanup call so a dead emulator cannot hang the run.
const cleanupTimeout = 10 * time.Second

// require returns the value of the environment variable key. When it is unset the
// test is skipped, or failed when CI=true, because CI must never skip silently.
func require(t testing.TB, key string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(key))
	if v != "" {
		return v
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("testenv: %s is unset but CI=true: the service must be running on CI (run ./scripts/test)", key)
	}
	t.Skipf("testenv: %s is unset; run ./scripts/test to start the services", key)
	return ""
}

// AWSConfig returns an aws.Config with static credentials test/test and the
// region from AWS_REGION (us-east-1 when unset). It needs no service running.
func AWSConfig(t testing.TB) aws.Config {
	t.Helper()
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = DefaultRegion
	}
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		// The emulators answer at once; a handful of retries covers a busy machine
		// without letting a dead endpoint stall a test for minutes.
		RetryMaxAttempts: 3,
	}
}

// DynamoDB returns a client for DYNAMODB_ENDPOINT, skipping (or failing on CI)
// when it is unset.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	endpoint := require(t, EnvDynamoDB)
	return dynamodb.NewFromConfig(AWSConfig(t), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// SQS returns a client for SQS_ENDPOINT, skipping (or failing on CI) when it is
// unset.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	endpoint := require(t, EnvSQS)
	return sqs.NewFromConfig(AWSConfig(t), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// SNS returns a client for SNS_ENDPOINT, skipping (or failing on CI) when it is
// unset.
func SNS(t testing.TB) *sns.Client {
	t.Helper()
	endpoint := require(t, EnvSNS)
	return sns.NewFromConfig(AWSConfig(t), func(o *sns.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})
}

// RedisAddr returns REDIS_ADDR (host:port), skipping (or failing on CI) when it
// is unset. Tests share one server, so prefix every key with UniqueName.
func RedisAddr(t testing.TB) string {
	t.Helper()
	return require(t, EnvRedis)
}

// ValkeyAddr returns VALKEY_ADDR (host:port), skipping (or failing on CI) when it
// is unset. Tests share one server, so prefix every key with UniqueName.
func ValkeyAddr(t testing.TB) string {
	t.Helper()
	return require(t, EnvValkey)
}

var (
	counter    atomic.Uint64
	processTag = newProcessTag()
	unsafeRune = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

func newProcessTag() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; the pid still
		// separates concurrent test binaries if it ever does.
		return hex.EncodeToString([]byte{byte(os.Getpid() >> 8), byte(os.Getpid())})
	}
	return hex.EncodeToString(b[:])
}

// MaxNameLen is the longest name UniqueName returns; it fits SQS queue names
// (80, with room for ".fifo"), SNS topic names (256) and DynamoDB tables (255).
const MaxNameLen = 64

// UniqueName returns a name unique to this test and process, built from prefix,
// the test's name, a random per-process tag and a counter. It contains only
// [A-Za-z0-9_-] and is at most MaxNameLen characters, so it is valid as a
// DynamoDB table, SQS queue (before ".fifo"), SNS topic or Redis key prefix.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	suffix := "-" + processTag + "-" + itoa(counter.Add(1))
	base := unsafeRune.ReplaceAllString(prefix+"-"+t.Name(), "_")
	if room := MaxNameLen - len(suffix); len(base) > room {
		base = base[:room]
	}
	return base + suffix
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// CreateQueue creates a queue named name (".fifo" is appended for a FIFO queue
// when missing) and deletes it on t.Cleanup. It returns the queue URL and, read
// back with GetQueueAttributes, its ARN. Failures are fatal to the test.
func CreateQueue(t testing.TB, c *sqs.Client, name string, fifo bool) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	attrs := map[string]string{}
	if fifo {
		if !strings.HasSuffix(name, ".fifo") {
			name += ".fifo"
		}
		attrs[string(sqstypes.QueueAttributeNameFifoQueue)] = "true"
	}
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("testenv: create queue %q: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Logf("testenv: delete queue %q: %v", url, err)
		}
	})
	ga, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("testenv: get ARN of queue %q: %v", url, err)
	}
	arn = ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if arn == "" {
		t.Fatalf("testenv: queue %q has no QueueArn attribute", url)
	}
	return url, arn
}

// QueueLen counts a queue's messages: visible, in flight and delayed.
func QueueLen(t testing.TB, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if err != nil {
		t.Fatalf("testenv: attributes of queue %q: %v", url, err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

// CreateTopic creates a topic named name (".fifo" is appended for a FIFO topic
// when missing), deletes it on t.Cleanup and returns its ARN. Failures are fatal
// to the test.
func CreateTopic(t testing.TB, c *sns.Client, name string, fifo bool) (arn string) {
	t.Helper()
	attrs := map[string]string{}
	if fifo {
		if !strings.HasSuffix(name, ".fifo") {
			name += ".fifo"
		}
		attrs["FifoTopic"] = "true"
	}
	out, err := c.CreateTopic(context.Background(), &sns.CreateTopicInput{Name: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("testenv: create topic %q: %v", name, err)
	}
	arn = aws.ToString(out.TopicArn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := c.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: aws.String(arn)}); err != nil {
			t.Logf("testenv: delete topic %q: %v", arn, err)
		}
	})
	return arn
}

// DeleteTableOnCleanup registers a t.Cleanup that deletes the DynamoDB table
// name. A table that is already gone is not an error.
func DeleteTableOnCleanup(t testing.TB, c *dynamodb.Client, name string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var notFound *dynamodbtypes.ResourceNotFoundException
		if err != nil && !errors.As(err, &notFound) {
			t.Logf("testenv: delete table %q: %v", name, err)
		}
	})
}
