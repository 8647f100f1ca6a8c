package reliability_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/consumer"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

// faultyConsumerSQS is the SQS client a consumer sees when SQS misbehaves:
// receives are throttled; batch deletes and visibility changes are throttled,
// fail for some entries, or succeed with their response lost.
//
// Fault kinds: sqs-throttle-receive, sqs-throttle-delete, sqs-partial-delete,
// sqs-lost-delete, sqs-throttle-visibility.
type faultyConsumerSQS struct {
	batchSQS
	f *faults
}

// batchSQS is an SQS client with the batch calls the consumer prefers.
type batchSQS interface {
	consumer.SQSClient
	consumer.BatchDeleteClient
	consumer.BatchVisibilityClient
}

func (s *faultyConsumerSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if s.f.hit("sqs-throttle-receive") {
		return nil, sqsThrottle("ReceiveMessage")
	}
	return s.batchSQS.ReceiveMessage(ctx, in, opts...)
}

func (s *faultyConsumerSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if s.f.hit("sqs-throttle-delete") {
		return nil, sqsThrottle("DeleteMessageBatch")
	}
	if len(in.Entries) > 1 && s.f.hit("sqs-partial-delete") {
		// The first entry fails server-side; the rest go through.
		rest := *in
		rest.Entries = in.Entries[1:]
		out, err := s.batchSQS.DeleteMessageBatch(ctx, &rest, opts...)
		if err != nil {
			return nil, err
		}
		out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: in.Entries[0].Id, Code: aws.String("InternalError"),
			Message: aws.String("injected"), SenderFault: false})
		return out, nil
	}
	out, err := s.batchSQS.DeleteMessageBatch(ctx, in, opts...)
	if err == nil && s.f.hit("sqs-lost-delete") {
		return nil, connReset("DeleteMessageBatch")
	}
	return out, err
}

func (s *faultyConsumerSQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if s.f.hit("sqs-throttle-visibility") {
		return nil, sqsThrottle("ChangeMessageVisibilityBatch")
	}
	return s.batchSQS.ChangeMessageVisibilityBatch(ctx, in, opts...)
}

// TestConsumerUnderSQSFaults runs the messaging consumer on a standard queue
// (Parallel) and a FIFO queue (PerGroupID) in fauxqs while SQS throttles and
// half-fails its calls and the handler itself fails now and then. Every message
// must end handled successfully and deleted (the queue empty); on the FIFO
// queue each group's messages must first succeed in the order they were sent;
// and an idempotent recorder keyed by message sees each effect once.
func TestConsumerUnderSQSFaults(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(map[bool]string{false: "standard", true: "fifo"}[fifo], func(t *testing.T) {
			t.Parallel()
			consumerUnderFaults(t, fifo)
		})
	}
}

func consumerUnderFaults(t *testing.T, fifo bool) {
	sq := testenv.SQS(t)
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	q := createTestQueue(t, sq, fifo)
	const messages, groups = 120, 6
	ctx := context.Background()
	for i := 0; i < messages; i += 10 {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url)}
		for j := i; j < i+10; j++ {
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(fmt.Sprintf("m-%d", j))}
			if fifo {
				e.MessageGroupId, e.MessageDeduplicationId = aws.String(fmt.Sprintf("g%d", j%groups)), aws.String(strconv.Itoa(j))
			}
			in.Entries = append(in.Entries, e)
		}
		if out, err := sq.SendMessageBatch(ctx, in); err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v %+v", err, out)
		}
	}

	f := newFaults(s, map[string]float64{
		"sqs-throttle-receive": 0.1, "sqs-throttle-delete": 0.1, "sqs-partial-delete": 0.15, "sqs-lost-delete": 0.1,
		"sqs-throttle-visibility": 0.2, "handler-fails": 0.1,
	})

	var mu sync.Mutex
	succeeded := map[string]int{}    // body -> successful handlings
	firstOrder := map[string][]int{} // group -> message numbers in first-success order
	applied := map[string]bool{}     // the idempotent recorder, keyed by message body
	handler := func(_ context.Context, m middleware.Message) error {
		if f.hit("handler-fails") {
			return fmt.Errorf("injected: handler failed")
		}
		body := string(m.Body())
		mu.Lock()
		defer mu.Unlock()
		if succeeded[body] == 0 {
			n, _ := strconv.Atoi(strings.TrimPrefix(body, "m-"))
			firstOrder[middleware.GroupID(m)] = append(firstOrder[middleware.GroupID(m)], n)
		}
		succeeded[body]++
		applied[body] = true
		return nil
	}
	mode := router.Parallel
	if fifo {
		mode = router.PerGroupID
	}
	route, err := router.New(q.url, handler, router.WithWaitTimeSeconds(1), router.WithRunMode(mode), router.WithDeleteBatch(),
		router.WithVisibilityTimeout(2), router.WithRetryBackoff(time.Second, 2*time.Second), router.WithWorkerPoolSize(8))
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(&faultyConsumerSQS{batchSQS: sq, f: f}, route,
		consumer.WithAckFlushInterval(20*time.Millisecond), consumer.WithRetryTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- c.Run(runCtx) }()
	deadline := time.Now().Add(90 * time.Second)
	settle := time.AfterFunc(45*time.Second, func() { f.off.Store(true) })
	defer settle.Stop()
	for {
		mu.Lock()
		done := len(succeeded) == messages
		mu.Unlock()
		if done && testenv.QueueLen(t, sq, q.url) == 0 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			<-errc
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("seed %d: %d of %d messages succeeded, %d left in the queue (faults %s)", s, len(succeeded), messages, testenv.QueueLen(t, sq, q.url), f)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	redelivered := 0
	for _, n := range succeeded {
		redelivered += n - 1
	}
	if len(applied) != messages {
		t.Fatalf("seed %d: %d effects applied, want %d", s, len(applied), messages)
	}
	if fifo {
		for g, order := range firstOrder {
			for i := 1; i < len(order); i++ {
				if order[i] < order[i-1] {
					t.Fatalf("seed %d: group %s: message %d first succeeded after %d, which was sent later: %v", s, g, order[i-1], order[i], order)
				}
			}
		}
	}
	t.Logf("messages=%d lost=0 handled again after a lost ack=%d faults=%s", messages, redelivered, f)
	if f.count("sqs-throttle-receive", "sqs-throttle-delete", "sqs-partial-delete", "sqs-lost-delete") == 0 {
		t.Fatalf("seed %d: no SQS fault was injected (%s); the run proved nothing", s, f)
	}
}
