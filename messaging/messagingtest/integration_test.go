package messagingtest_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// TestEmulatorLimits runs the limits suite against the SQS/SNS emulator, so
// the fake and the emulator are held to the same cases.
func TestEmulatorLimits(t *testing.T) {
	t.Parallel()
	sqsc, snsc := testenv.SQS(t), testenv.SNS(t)
	var arns sync.Map // queue URL -> ARN
	messagingtest.RunLimitsSuite(t, messagingtest.LimitsHarness{
		SQS: sqsc,
		SNS: snsc,
		NewQueue: func(t *testing.T, fifo bool) string {
			url, arn := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "lim"), fifo)
			arns.Store(url, arn)
			return url
		},
		NewTopic: func(t *testing.T, fifo bool) string {
			return testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "lim"), fifo)
		},
		Subscribe: func(t *testing.T, topic, url string, raw bool) {
			arn, _ := arns.Load(url)
			if _, err := snsc.Subscribe(context.Background(), &sns.SubscribeInput{TopicArn: aws.String(topic),
				Protocol: aws.String("sqs"), Endpoint: aws.String(arn.(string)),
				Attributes: map[string]string{"RawMessageDelivery": strconv.FormatBool(raw)}}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
		},
		// fauxqs's clock cannot be moved: RuleSQSDedupWindow is in
		// emulatorUnenforced and runs on the fake only.
		Unenforced: emulatorUnenforced,
	})
}

// emulatorUnenforced lists what the emulator (fauxqs 2.4.1) accepts although
// the SQS and SNS API references say AWS rejects it; the fake enforces
// these, and RunLimitsSuite holds the fake to them.
var emulatorUnenforced = map[string]string{
	messagingtest.LimitSQSAttributes: "fauxqs accepts 11 message attributes",
	messagingtest.RuleSQSDedupWindow: "fauxqs keeps its 5-minute deduplication window on the wall clock and offers no way to move time, " +
		"so a resend 6 minutes later cannot be tested in a test run; the fake's window is tested on its injected clock (TestFakeLimits)",
	messagingtest.RuleSNSRawDropsManyAttributes: "fauxqs delivers a message with 11 attributes to a raw-delivery SQS subscription; " +
		"SNS discards it as a client-side error",
	messagingtest.LimitSQSGroupID:         "fauxqs accepts 129-character group IDs",
	messagingtest.LimitSQSDedupID:         "fauxqs accepts 129-character deduplication IDs",
	messagingtest.LimitSQSDedupOnStandard: "fauxqs accepts a deduplication ID on a standard queue",
	messagingtest.LimitSNSGroupID:         "fauxqs accepts 129-character group IDs on Publish",
	messagingtest.LimitSNSDedupOnStandard: "fauxqs accepts a deduplication ID on a standard topic",
}
