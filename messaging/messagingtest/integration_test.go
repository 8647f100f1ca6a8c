package messagingtest_test

import (
	"testing"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// TestEmulatorLimits runs the limits suite against the SQS/SNS emulator, so
// the fake and the emulator are held to the same cases.
func TestEmulatorLimits(t *testing.T) {
	t.Parallel()
	sqsc, snsc := testenv.SQS(t), testenv.SNS(t)
	messagingtest.RunLimitsSuite(t, messagingtest.LimitsHarness{
		SQS: sqsc,
		SNS: snsc,
		NewQueue: func(t *testing.T, fifo bool) string {
			url, _ := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "lim"), fifo)
			return url
		},
		NewTopic: func(t *testing.T, fifo bool) string {
			return testenv.CreateTopic(t, snsc, testenv.UniqueName(t, "lim"), fifo)
		},
		Unenforced: emulatorUnenforced,
	})
}

// emulatorUnenforced lists what the emulator (fauxqs 2.4.1) accepts although
// the SQS and SNS API references say AWS rejects it; the fake enforces
// these, and RunLimitsSuite holds the fake to them.
var emulatorUnenforced = map[string]string{
	messagingtest.LimitSQSAttributes:      "fauxqs accepts 11 message attributes",
	messagingtest.LimitSQSBodySize:        "fauxqs accepts SQS bodies over 256 KiB (SQS itself has allowed up to 1 MiB since 2025; the fake keeps 256 KiB, the SNS limit a fanned-out message must fit)",
	messagingtest.LimitSQSGroupID:         "fauxqs accepts 129-character group IDs",
	messagingtest.LimitSQSDedupID:         "fauxqs accepts 129-character deduplication IDs",
	messagingtest.LimitSQSDedupOnStandard: "fauxqs accepts a deduplication ID on a standard queue",
	messagingtest.LimitSNSAttributes:      "fauxqs accepts 11 message attributes on Publish",
	messagingtest.LimitSNSGroupID:         "fauxqs accepts 129-character group IDs on Publish",
	messagingtest.LimitSNSDedupOnStandard: "fauxqs accepts a deduplication ID on a standard topic",
}
