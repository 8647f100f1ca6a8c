package messagingtest_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/messaging/messagingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
