package bench

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// memSQS is an in-memory SQS queue holding n messages. Like a real queue,
// every receive hands out distinct messages (their own MessageId and body)
// with a fresh receipt handle, and a delete is accepted only for a handle it
// issued; receives block once the queue is empty, like an empty long poll.
// It counts deletes and API calls. Its own allocation is one string per
// receive (the output and messages are pooled once all ten are deleted), so
// the figures measure the library.
type memSQS struct {
	next    atomic.Int64 // sequence number of the next message to hand out
	deleted atomic.Int64
	calls   atomic.Int64
	target  int64
	done    chan struct{}
	once    sync.Once
	fifo    bool
	// acked has one bit per message: set once its delete is accepted.
	acked []atomic.Uint64
	// bufs[i] backs the receive of messages 10i..10i+9; it goes back to
	// pool once all ten are deleted, when the consumer holds none of them.
	bufs []atomic.Pointer[receiveBuf]
	pool sync.Pool
}

func newMemSQS(n int, fifo bool) *memSQS {
	m := &memSQS{target: int64(n), done: make(chan struct{}), fifo: fifo,
		acked: make([]atomic.Uint64, n/64+1), bufs: make([]atomic.Pointer[receiveBuf], n/10+1)}
	m.pool.New = func() any { return &receiveBuf{} }
	return m
}

var (
	stdAttrs  = map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"}
	fifoAttrs = func() []map[string]string {
		out := make([]map[string]string, 10)
		for i := range out {
			out[i] = map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000",
				"MessageGroupId": "group-" + strconv.Itoa(i)}
		}
		return out
	}()
)

func (m *memSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	m.calls.Add(1)
	want := int64(min(max(in.MaxNumberOfMessages, 1), 10))
	first := m.next.Add(want) - want
	if first >= m.target {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	k := int(min(want, m.target-first))
	// One pooled buffer holds the output and its messages, one string their
	// IDs, receipt handles and bodies.
	var rb *receiveBuf
	if want == 10 && first%10 == 0 {
		rb = m.pool.Get().(*receiveBuf)
		rb.pending.Store(int32(k))
		m.bufs[first/10].Store(rb)
	} else {
		rb = &receiveBuf{}
	}
	var sb strings.Builder
	sb.Grow(k * 64)
	buf := make([]byte, 0, 32)
	var bounds [31]int
	for i := range k {
		seq := strconv.AppendInt(buf[:0], first+int64(i), 10)
		sb.WriteString("m-")
		sb.Write(seq)
		bounds[3*i+1] = sb.Len()
		sb.WriteString("r-")
		sb.Write(seq)
		bounds[3*i+2] = sb.Len()
		sb.WriteString(`{"order":"o-`)
		sb.Write(seq)
		sb.WriteString(`","total":42}`)
		bounds[3*i+3] = sb.Len()
	}
	all := sb.String()
	for i := range 3 * k {
		rb.strs[i] = all[bounds[i]:bounds[i+1]]
	}
	for i := range k {
		attrs := stdAttrs
		if m.fifo {
			attrs = fifoAttrs[(first+int64(i))%10]
		}
		rb.msgs[i] = types.Message{MessageId: &rb.strs[3*i], ReceiptHandle: &rb.strs[3*i+1], Body: &rb.strs[3*i+2], Attributes: attrs}
	}
	rb.out.Messages = rb.msgs[:k]
	return &rb.out, nil
}

type receiveBuf struct {
	pending atomic.Int32
	out     sqs.ReceiveMessageOutput
	msgs    [10]types.Message
	strs    [30]string
}

// ack accepts the delete of receipt handle h ("r-<seq>") once; it reports
// false for a handle this queue never issued.
func (m *memSQS) ack(h *string) bool {
	s := aws.ToString(h)
	if !strings.HasPrefix(s, "r-") {
		return false
	}
	seq, err := strconv.ParseInt(s[2:], 10, 64)
	if err != nil || seq < 0 || seq >= m.target {
		return false
	}
	bit := uint64(1) << (seq % 64)
	if m.acked[seq/64].Or(bit)&bit == 0 {
		if rb := m.bufs[seq/10].Load(); rb != nil && rb.pending.Add(-1) == 0 {
			m.bufs[seq/10].Store(nil)
			m.pool.Put(rb)
		}
		if m.deleted.Add(1) >= m.target {
			m.once.Do(func() { close(m.done) })
		}
	}
	return true
}

var invalidHandle = aws.String("ReceiptHandleIsInvalid")

func (m *memSQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	m.calls.Add(1)
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		if !m.ack(e.ReceiptHandle) {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: invalidHandle, SenderFault: true})
		}
	}
	return out, nil
}

func (m *memSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	m.calls.Add(1)
	if !m.ack(in.ReceiptHandle) {
		return nil, &types.ReceiptHandleIsInvalid{Message: in.ReceiptHandle}
	}
	return &sqs.DeleteMessageOutput{}, nil
}

func (m *memSQS) ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	m.calls.Add(1)
	return &sqs.ChangeMessageVisibilityBatchOutput{}, nil
}

func (m *memSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	m.calls.Add(1)
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (m *memSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/000000000000/" + aws.ToString(in.QueueName))}, nil
}

func (m *memSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	m.calls.Add(1)
	return &sqs.SendMessageOutput{MessageId: aws.String("sent")}, nil
}
