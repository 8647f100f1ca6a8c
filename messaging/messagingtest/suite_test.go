package messagingtest_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// The emulator tests leave the SDK's idle keep-alive connections behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

func TestFakeConformance(t *testing.T) {
	t.Parallel()
	fake := messagingtest.NewSQS()
	var n atomic.Int64
	messagingtest.RunConsumerSuite(t, messagingtest.Harness{
		Client: fake,
		NewQueue: func(_ *testing.T, fifo bool) string {
			name := fmt.Sprint("q", n.Add(1))
			if fifo {
				name += ".fifo"
			}
			url, _ := fake.AddQueue(name)
			return url
		},
		Len: func(_ *testing.T, url string) int { return fake.Len(url) },
	})
}

// The fake follows every limit and rule, on a clock the suite moves.
func TestFakeLimits(t *testing.T) {
	t.Parallel()
	clk := messagingtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := messagingtest.NewSQS()
	fake.SetNow(clk.Now)
	topics := messagingtest.NewSNS(fake)
	var n atomic.Int64
	messagingtest.RunLimitsSuite(t, messagingtest.LimitsHarness{
		SQS: fake,
		SNS: topics,
		NewQueue: func(_ *testing.T, fifo bool) string {
			name := fmt.Sprint("limits", n.Add(1))
			if fifo {
				name += ".fifo"
			}
			url, _ := fake.AddQueue(name)
			if fifo {
				fake.SetContentBasedDeduplication(url, false)
			}
			return url
		},
		NewTopic: func(_ *testing.T, fifo bool) string {
			name := fmt.Sprint("arn:aws:sns:us-east-1:000000000000:t", n.Add(1))
			if fifo {
				name += ".fifo"
				topics.SetContentBasedDeduplication(name, false)
			}
			return name
		},
		Subscribe: func(_ *testing.T, topic, url string, raw bool) {
			if raw {
				topics.Subscribe(topic, url)
			} else {
				topics.SubscribeEnvelope(topic, url)
			}
		},
		Advance: clk.Advance,
	})
}
