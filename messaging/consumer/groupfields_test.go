package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// Custom group fields form the PerGroupID key from SQS message attributes
// and, for an SNS subscription without raw delivery, from the envelope's
// attributes: one tenant's messages run one at a time, in order, while
// another tenant's run meanwhile.
func TestCustomGroupFields(t *testing.T) {
	t.Parallel()
	for _, raw := range []bool{true, false} {
		t.Run(fmt.Sprint("raw=", raw), func(t *testing.T) {
			t.Parallel()
			fake := messagingtest.NewSQS()
			name := fmt.Sprint("tenants-", raw)
			url, _ := fake.AddQueue(name)
			topic := "arn:aws:sns:us-east-1:000000000000:" + name
			s := messagingtest.NewSNS(fake)
			if raw {
				s.Subscribe(topic, url)
			} else {
				s.SubscribeEnvelope(topic, url)
			}
			publish := func(tenant string, seq int) {
				t.Helper()
				if _, err := s.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(topic),
					Message: aws.String(fmt.Sprint(tenant, "-", seq)),
					MessageAttributes: map[string]types.MessageAttributeValue{
						"tenant": {DataType: aws.String("String"), StringValue: aws.String(tenant)}}}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				publish("acme", i)
			}
			publish("globex", 0)
			release := make(chan struct{})
			var mu sync.Mutex
			var order []string
			running := map[string]int{}
			overlap := false
			r := newRoute(t, name, func(_ context.Context, msg middleware.Message) error {
				tenant := msg.Attribute("tenant")
				mu.Lock()
				running[tenant]++
				overlap = overlap || running[tenant] > 1
				order = append(order, msg.Message())
				mu.Unlock()
				if msg.Message() == "acme-0" {
					// Blocks until globex ran: it must not wait behind acme.
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}
				if tenant == "globex" {
					close(release)
				}
				mu.Lock()
				running[tenant]--
				mu.Unlock()
				return nil
			}, router.WithRunMode(router.PerGroupID), router.WithCustomGroupFields("tenant"), router.WithWorkerPoolSize(64))
			c, err := consumer.New(fake, r)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, c, func() bool { return fake.Len(url) == 0 })
			mu.Lock()
			defer mu.Unlock()
			var acme []string
			globexBefore := -1
			for _, m := range order {
				switch {
				case m == "globex-0":
					globexBefore = len(acme)
				case m[:4] == "acme":
					acme = append(acme, m)
				}
			}
			if overlap || fmt.Sprint(acme) != "[acme-0 acme-1 acme-2]" || globexBefore < 0 || globexBefore > 1 {
				t.Fatalf("order %v (overlap %v): globex must run while acme-0 blocks, acme in order", order, overlap)
			}
		})
	}
}
