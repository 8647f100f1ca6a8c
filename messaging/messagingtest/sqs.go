package messagingtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// SQS is an in-memory SQS. It models visibility timeouts, receipt handles
// (on a FIFO queue only the latest is valid; on a standard queue a delete
// with an earlier one succeeds, as SQS answers), ApproximateReceiveCount,
// FIFO group locking and the 5-minute deduplication window (explicit IDs, or
// content-based deduplication when the queue has it), redrive to a DLQ, and
// long polling, and counts every call. Its clock is injected with SetNow.
// The zero value is not usable; call NewSQS.
type SQS struct {
	mu        sync.Mutex
	now       func() time.Time
	queues    map[string]*queue // by URL
	byName    map[string]*queue
	calls     map[string]int
	changed   chan struct{}
	nextID    int
	overLimit int
	// MaxWait caps long polling so tests stay fast (default 200ms).
	MaxWait time.Duration
	// Deleted, when set, is called for each message deleted.
	Deleted func(queueURL, messageID string)
}

type queue struct {
	name, url, arn string
	fifo           bool
	contentDedup   bool // FIFO ContentBasedDeduplication
	msgs           []*fakeMessage
	dedup          map[string]time.Time // deduplication ID -> first accepted
	receipts       map[string]string    // standard queues: every receipt handle issued -> message ID
	visibility     int32
	dlq            *queue
	maxReceive     int
}

type fakeMessage struct {
	id, body, group string
	dedup           string
	attrs           map[string]types.MessageAttributeValue
	visibleAt       time.Time
	receipt         string
	receives        int
	receivedAt      time.Time
	sentAt          time.Time
}

// NewSQS returns an empty fake using the wall clock.
func NewSQS() *SQS {
	return &SQS{
		now:     time.Now,
		queues:  map[string]*queue{},
		byName:  map[string]*queue{},
		calls:   map[string]int{},
		changed: make(chan struct{}),
		MaxWait: 200 * time.Millisecond,
	}
}

// SetNow replaces the time source (for example a Clock's Now).
func (s *SQS) SetNow(now func() time.Time) {
	s.mu.Lock()
	s.now = now
	s.mu.Unlock()
}

// AddQueue creates a queue (FIFO if name ends in ".fifo") and returns its URL
// and ARN. A FIFO queue made here has content-based deduplication, the
// setting most tests want; SetContentBasedDeduplication turns it off, and
// CreateQueue, like SQS, enables it only when asked.
func (s *SQS) AddQueue(name string) (url, arn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addQueue(name, true)
}

// SetContentBasedDeduplication sets a FIFO queue's ContentBasedDeduplication:
// without it, a send without MessageDeduplicationId is refused.
func (s *SQS) SetContentBasedDeduplication(url string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[url].contentDedup = on
}

func (s *SQS) addQueue(name string, contentDedup bool) (string, string) {
	if q, ok := s.byName[name]; ok {
		return q.url, q.arn
	}
	q := &queue{
		name: name, url: "https://sqs.us-east-1.amazonaws.com/000000000000/" + name,
		arn:  "arn:aws:sqs:us-east-1:000000000000:" + name,
		fifo: strings.HasSuffix(name, ".fifo"), dedup: map[string]time.Time{}, receipts: map[string]string{},
		visibility: 30,
	}
	q.contentDedup = q.fifo && contentDedup
	s.queues[q.url], s.byName[name] = q, q
	return q.url, q.arn
}

// SetRedrive moves messages of src to dlq once received more than
// maxReceiveCount times, like an SQS redrive policy.
func (s *SQS) SetRedrive(srcURL, dlqURL string, maxReceiveCount int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[srcURL].dlq, s.queues[srcURL].maxReceive = s.queues[dlqURL], maxReceiveCount
}

// Calls returns how many times the named API (e.g. "ReceiveMessage") was
// called.
func (s *SQS) Calls(api string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[api]
}

// TotalCalls returns the number of API calls of every kind.
func (s *SQS) TotalCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// VisibilityRejections counts visibility changes rejected for passing the
// 12 h limit.
func (s *SQS) VisibilityRejections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overLimit
}

// Len returns the number of messages in a queue, visible or not.
func (s *SQS) Len(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues[url].msgs)
}

// Bodies returns the bodies of a queue's messages in queue order.
func (s *SQS) Bodies(url string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.queues[url].msgs {
		out = append(out, m.body)
	}
	return out
}

// VisibleIn returns how long until a message with the given body becomes
// visible (0 if visible now) and whether it exists.
func (s *SQS) VisibleIn(url, body string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, m := range s.queues[url].msgs {
		if m.body == body {
			return max(m.visibleAt.Sub(now), 0), true
		}
	}
	return 0, false
}

func (s *SQS) count(api string) { s.calls[api]++ }

func (s *SQS) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *SQS) queue(url *string) (*queue, error) {
	q, ok := s.queues[aws.ToString(url)]
	if !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("no queue " + aws.ToString(url))}
	}
	return q, nil
}

// CreateQueue implements the SQS API.
func (s *SQS) CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("CreateQueue")
	url, _ := s.addQueue(aws.ToString(in.QueueName),
		in.Attributes[string(types.QueueAttributeNameContentBasedDeduplication)] == "true")
	return &sqs.CreateQueueOutput{QueueUrl: aws.String(url)}, nil
}

// GetQueueUrl implements the SQS API.
func (s *SQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("GetQueueUrl")
	q, ok := s.byName[aws.ToString(in.QueueName)]
	if !ok {
		return nil, &types.QueueDoesNotExist{Message: aws.String("no queue " + aws.ToString(in.QueueName))}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(q.url)}, nil
}

// SendMessage implements the SQS API.
func (s *SQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("SendMessage")
	q, err := s.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	id, err := s.send(q, aws.ToString(in.MessageBody), aws.ToString(in.MessageGroupId),
		aws.ToString(in.MessageDeduplicationId), in.MessageAttributes, in.DelaySeconds)
	if err != nil {
		return nil, invalidParameter(err.Error())
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

// SendMessageBatch implements the SQS API.
func (s *SQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("SendMessageBatch")
	q, err := s.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Entries) == 0 || len(in.Entries) > MaxBatchEntries {
		return nil, &types.TooManyEntriesInBatchRequest{Message: aws.String(strconv.Itoa(len(in.Entries)) + " entries")}
	}
	total := 0
	for _, e := range in.Entries {
		total += MessageSize(aws.ToString(e.MessageBody), e.MessageAttributes)
	}
	if total > MaxMessageBytes {
		return nil, &types.BatchRequestTooLong{Message: aws.String(strconv.Itoa(total) + " bytes")}
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		id, err := s.send(q, aws.ToString(e.MessageBody), aws.ToString(e.MessageGroupId),
			aws.ToString(e.MessageDeduplicationId), e.MessageAttributes, e.DelaySeconds)
		if err != nil {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidParameterValue"), Message: aws.String(err.Error()), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(id)})
	}
	return out, nil
}

// Send enqueues a message directly (test setup; not counted as an API call).
// On a FIFO queue it deduplicates on the body's SHA-256 whatever the queue's
// ContentBasedDeduplication.
func (s *SQS) Send(url, body, groupID string, attrs map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queue(&url)
	if err != nil {
		return "", err
	}
	av := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		av[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	dedup := ""
	if q.fifo {
		dedup = contentHash(body)
	}
	return s.send(q, body, groupID, dedup, av, 0)
}

func contentHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// SQS limits the fake enforces, as the SQS API reference documents them.
const (
	MaxMessageAttributes = 10
	// MaxMessageBytes is the SQS message size limit, body plus attribute
	// names, types and values, for one message and for a SendMessageBatch:
	// 1 MiB since AWS raised it in 2025. SNS stays at MaxPublishBytes.
	MaxMessageBytes      = 1024 * 1024
	MaxIDLength          = 128 // MessageGroupId and MessageDeduplicationId
	MaxBatchEntries      = 10
	MaxVisibilitySeconds = 43200 // 12 h
	// DeduplicationWindow is how long a FIFO queue (or topic) drops a
	// message whose deduplication ID it has already accepted.
	DeduplicationWindow = 5 * time.Minute
)

// MessageSize is what a message counts toward the size limit: the body and
// each attribute's name, data type and value.
func MessageSize(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for k, v := range attrs {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// validate applies the SendMessage limits of real SQS.
func validate(fifo bool, body, group, dedup string, attrs map[string]types.MessageAttributeValue, delay int32) error {
	switch {
	case body == "":
		return fmt.Errorf("MessageBody must not be empty")
	case len(attrs) > MaxMessageAttributes:
		return fmt.Errorf("number of message attributes [%d] exceeds the allowed maximum [%d]", len(attrs), MaxMessageAttributes)
	case MessageSize(body, attrs) > MaxMessageBytes:
		return fmt.Errorf("message of %d bytes is longer than the limit of %d bytes", MessageSize(body, attrs), MaxMessageBytes)
	case len(group) > MaxIDLength:
		return fmt.Errorf("MessageGroupId of %d characters exceeds %d", len(group), MaxIDLength)
	case len(dedup) > MaxIDLength:
		return fmt.Errorf("MessageDeduplicationId of %d characters exceeds %d", len(dedup), MaxIDLength)
	case !fifo && dedup != "":
		return fmt.Errorf("MessageDeduplicationId is only valid for FIFO queues")
	case fifo && delay != 0:
		return fmt.Errorf("DelaySeconds per message is not valid for FIFO queues")
	case delay < 0 || delay > 900:
		return fmt.Errorf("DelaySeconds %d not in [0, 900]", delay)
	}
	for k, v := range attrs {
		if k == "" || len(k) > 256 {
			return fmt.Errorf("message attribute name %q is not valid", k)
		}
		if aws.ToString(v.DataType) == "" {
			return fmt.Errorf("message attribute %q has no DataType", k)
		}
		if v.StringValue == nil && v.BinaryValue == nil {
			return fmt.Errorf("message attribute %q has no value", k)
		}
	}
	return nil
}

func (s *SQS) send(q *queue, body, group, dedup string, attrs map[string]types.MessageAttributeValue, delay int32) (string, error) {
	if err := validate(q.fifo, body, group, dedup, attrs, delay); err != nil {
		return "", err
	}
	now := s.now()
	if q.fifo {
		if group == "" {
			return "", fmt.Errorf("MessageGroupId required on FIFO queue %s", q.name)
		}
		if dedup == "" {
			if !q.contentDedup {
				return "", fmt.Errorf("the queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
			}
			dedup = contentHash(body)
		}
		s.nextID++
		if first, ok := q.dedup[dedup]; ok && now.Sub(first) < DeduplicationWindow {
			return "dup-" + strconv.Itoa(s.nextID), nil
		}
		q.dedup[dedup] = now
	} else {
		s.nextID++
	}
	id := fmt.Sprintf("m-%08d", s.nextID)
	q.msgs = append(q.msgs, &fakeMessage{id: id, body: body, group: group, dedup: dedup, attrs: attrs,
		visibleAt: now.Add(time.Duration(delay) * time.Second), sentAt: now})
	s.notify()
	return id, nil
}

// ReceiveMessage implements the SQS API, long polling up to MaxWait.
func (s *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.count("ReceiveMessage")
	switch {
	case in.MaxNumberOfMessages < 0 || in.MaxNumberOfMessages > MaxBatchEntries:
		s.mu.Unlock()
		return nil, invalidParameter("MaxNumberOfMessages " + strconv.Itoa(int(in.MaxNumberOfMessages)) + " not in [1, 10]")
	case in.VisibilityTimeout < 0 || in.VisibilityTimeout > MaxVisibilitySeconds:
		s.mu.Unlock()
		return nil, invalidParameter("VisibilityTimeout " + strconv.Itoa(int(in.VisibilityTimeout)) + " not in [0, 43200]")
	case in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20:
		s.mu.Unlock()
		return nil, invalidParameter("WaitTimeSeconds " + strconv.Itoa(int(in.WaitTimeSeconds)) + " not in [0, 20]")
	}
	wait := min(time.Duration(in.WaitTimeSeconds)*time.Second, s.MaxWait)
	deadline := time.Now().Add(wait)
	for {
		q, err := s.queue(in.QueueUrl)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if msgs := s.receive(q, in); len(msgs) > 0 || !time.Now().Before(deadline) {
			s.mu.Unlock()
			return &sqs.ReceiveMessageOutput{Messages: msgs}, nil
		}
		changed := s.changed
		s.mu.Unlock()
		t := time.NewTimer(min(time.Until(deadline), 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-changed:
			t.Stop()
		case <-t.C:
		}
		s.mu.Lock()
	}
}

func (s *SQS) receive(q *queue, in *sqs.ReceiveMessageInput) []types.Message {
	now := s.now()
	max := int(in.MaxNumberOfMessages)
	if max <= 0 {
		max = 1
	}
	vis := q.visibility
	if in.VisibilityTimeout > 0 {
		vis = in.VisibilityTimeout
	}
	locked := map[string]bool{}
	if q.fifo {
		for _, m := range q.msgs {
			if now.Before(m.visibleAt) && m.receives > 0 {
				locked[m.group] = true
			}
		}
	}
	var out []types.Message
	kept := q.msgs[:0]
	skipGroup := map[string]bool{}
	for _, m := range q.msgs {
		if len(out) >= max || now.Before(m.visibleAt) || locked[m.group] || skipGroup[m.group] {
			if q.fifo && !now.Before(m.visibleAt) {
				// Order within a group: nothing behind a skipped message.
				skipGroup[m.group] = true
			}
			kept = append(kept, m)
			continue
		}
		if q.dlq != nil && m.receives >= q.maxReceive {
			q.dlq.msgs = append(q.dlq.msgs, &fakeMessage{id: m.id, body: m.body, group: m.group, attrs: m.attrs, sentAt: m.sentAt, visibleAt: now})
			continue
		}
		m.receives++
		m.receivedAt = now
		m.receipt = m.id + "#" + strconv.Itoa(m.receives)
		if !q.fifo {
			q.receipts[m.receipt] = m.id
		}
		m.visibleAt = now.Add(time.Duration(vis) * time.Second)
		attrs := map[string]string{
			"ApproximateReceiveCount": strconv.Itoa(m.receives),
			"SentTimestamp":           strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		}
		if q.fifo {
			attrs["MessageGroupId"] = m.group
			attrs["MessageDeduplicationId"] = m.dedup
		}
		out = append(out, types.Message{
			MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.receipt), Body: aws.String(m.body),
			Attributes: attrs, MessageAttributes: m.attrs,
		})
		kept = append(kept, m)
	}
	clear(q.msgs[len(kept):])
	q.msgs = kept
	return out
}

func (s *SQS) find(q *queue, receipt string) int {
	for i, m := range q.msgs {
		if m.receipt == receipt && receipt != "" {
			return i
		}
	}
	return -1
}

// DeleteMessage implements the SQS API.
func (s *SQS) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("DeleteMessage")
	q, err := s.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if !s.remove(q, aws.ToString(in.ReceiptHandle)) {
		return nil, &types.ReceiptHandleIsInvalid{Message: in.ReceiptHandle}
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// remove deletes the message of receipt. On a standard queue any receipt
// handle the queue issued deletes its message, or succeeds with nothing to
// delete once it is gone, as SQS answers; on a FIFO queue only the latest
// handle is valid.
func (s *SQS) remove(q *queue, receipt string) bool {
	i := s.find(q, receipt)
	if i < 0 && !q.fifo {
		id, issued := q.receipts[receipt]
		if !issued {
			return false
		}
		for j, m := range q.msgs {
			if m.id == id {
				i = j
				break
			}
		}
		if i < 0 {
			return true
		}
	}
	if i < 0 {
		return false
	}
	id := q.msgs[i].id
	q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
	s.notify()
	if s.Deleted != nil {
		s.Deleted(q.url, id)
	}
	return true
}

// DeleteMessageBatch implements the SQS API.
func (s *SQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("DeleteMessageBatch")
	q, err := s.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Entries) == 0 || len(in.Entries) > MaxBatchEntries {
		return nil, &types.TooManyEntriesInBatchRequest{Message: aws.String(strconv.Itoa(len(in.Entries)))}
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		if s.remove(q, aws.ToString(e.ReceiptHandle)) {
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
		} else {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
		}
	}
	return out, nil
}

// ChangeMessageVisibility implements the SQS API.
func (s *SQS) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("ChangeMessageVisibility")
	q, err := s.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if err := s.changeVis(q, aws.ToString(in.ReceiptHandle), in.VisibilityTimeout); err != nil {
		return nil, err
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (s *SQS) changeVis(q *queue, receipt string, timeout int32) error {
	if timeout < 0 || timeout > MaxVisibilitySeconds {
		return &types.InvalidAttributeValue{Message: aws.String("VisibilityTimeout " + strconv.Itoa(int(timeout)))}
	}
	i := s.find(q, receipt)
	if i < 0 {
		return &types.ReceiptHandleIsInvalid{Message: aws.String(receipt)}
	}
	m := q.msgs[i]
	if !s.now().Before(m.visibleAt) {
		return &types.MessageNotInflight{}
	}
	if s.now().Add(time.Duration(timeout) * time.Second).After(m.receivedAt.Add(12 * time.Hour)) {
		// Real SQS rejects a total invisibility beyond 12 h from receipt.
		s.overLimit++
		return &types.InvalidAttributeValue{Message: aws.String("visibility beyond 12h after receipt")}
	}
	m.visibleAt = s.now().Add(time.Duration(timeout) * time.Second)
	s.notify()
	return nil
}

// ChangeMessageVisibilityBatch implements the SQS API.
func (s *SQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("ChangeMessageVisibilityBatch")
	q, err := s.queue(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if len(in.Entries) == 0 || len(in.Entries) > MaxBatchEntries {
		return nil, &types.TooManyEntriesInBatchRequest{Message: aws.String(strconv.Itoa(len(in.Entries)))}
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if err := s.changeVis(q, aws.ToString(e.ReceiptHandle), e.VisibilityTimeout); err != nil {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(err.Error()), SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// invalidParameter is the error real SQS returns for a request that breaks a
// limit: code InvalidParameterValue, a client fault.
func invalidParameter(msg string) error {
	return &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: msg, Fault: smithy.FaultClient}
}
