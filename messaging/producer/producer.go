// Package producer publishes to SNS topics, one message at a time or in
// batches, generating FIFO group and deduplication IDs when asked.
package producer

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/idgen"
)

// SNS limits on one PublishBatch request.
const (
	MaxBatchEntries = 10
	MaxBatchBytes   = 256 * 1024
)

// SNSClient is the part of *sns.Client the producer uses.
type SNSClient interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatch(ctx context.Context, in *sns.PublishBatchInput, opts ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

// Producer publishes to SNS.
type Producer struct {
	client SNSClient
	group  idgen.GroupIDGenerator
	dedup  idgen.DeduplicationIDGenerator
}

// Option configures a Producer.
type Option func(*Producer)

// WithGroupIDGenerator generates MessageGroupId for FIFO topics when unset.
func WithGroupIDGenerator(gen idgen.GroupIDGenerator) Option {
	return func(p *Producer) { p.group = gen }
}

// WithDeduplicationIDGenerator generates MessageDeduplicationId for FIFO
// topics when unset.
func WithDeduplicationIDGenerator(gen idgen.DeduplicationIDGenerator) Option {
	return func(p *Producer) { p.dedup = gen }
}

// New builds a Producer; it returns ErrNoSNSClient for a nil client.
func New(client SNSClient, opts ...Option) (*Producer, error) {
	if client == nil {
		return nil, merrors.ErrNoSNSClient
	}
	p := &Producer{client: client}
	for _, o := range opts {
		if o != nil {
			o(p)
		}
	}
	return p, nil
}

// BuildTopicARN returns arn:aws:sns:REGION:ACCOUNT:TOPIC.
func BuildTopicARN(region, accountID, topicName string) string {
	return "arn:aws:sns:" + region + ":" + accountID + ":" + topicName
}

func isFIFO(topicARN string) bool { return strings.HasSuffix(topicARN, ".fifo") }

// fields are the generator inputs: string attributes plus the body as "body".
func fields(body string, attrs map[string]types.MessageAttributeValue) map[string]string {
	f := make(map[string]string, len(attrs)+1)
	for k, v := range attrs {
		if v.StringValue != nil {
			f[k] = *v.StringValue
		}
	}
	f["body"] = body
	return f
}

func (p *Producer) ids(ctx context.Context, topicARN, body string, attrs map[string]types.MessageAttributeValue, group, dedup **string) error {
	if !isFIFO(topicARN) {
		return nil
	}
	if p.group != nil && aws.ToString(*group) == "" {
		id, err := p.group.Generate(ctx, fields(body, attrs))
		if err != nil {
			return fmt.Errorf("generate MessageGroupId: %w", err)
		}
		*group = aws.String(id)
	}
	if p.dedup != nil && aws.ToString(*dedup) == "" {
		id, err := p.dedup.Generate(ctx, fields(body, attrs))
		if err != nil {
			return fmt.Errorf("generate MessageDeduplicationId: %w", err)
		}
		*dedup = aws.String(id)
	}
	return nil
}

// Publish publishes one message and returns its MessageId. It returns
// ErrEmptyInput for a nil input or an empty message. in is not modified.
func (p *Producer) Publish(ctx context.Context, in *sns.PublishInput) (string, error) {
	if in == nil || aws.ToString(in.Message) == "" {
		return "", merrors.ErrEmptyInput
	}
	cp := *in
	if err := p.ids(ctx, aws.ToString(cp.TopicArn), *cp.Message, cp.MessageAttributes, &cp.MessageGroupId, &cp.MessageDeduplicationId); err != nil {
		return "", err
	}
	out, err := p.client.Publish(ctx, &cp)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.MessageId), nil
}

// PublishBatch publishes up to 10 entries in one call. It returns
// ErrEmptyInput for no entries and ErrMaxBatchSize for more than 10; entry
// IDs default to their index. in is not modified.
func (p *Producer) PublishBatch(ctx context.Context, in *sns.PublishBatchInput) (*sns.PublishBatchOutput, error) {
	if in == nil || len(in.PublishBatchRequestEntries) == 0 {
		return nil, merrors.ErrEmptyInput
	}
	if len(in.PublishBatchRequestEntries) > MaxBatchEntries {
		return nil, merrors.ErrMaxBatchSize
	}
	cp := *in
	cp.PublishBatchRequestEntries = append([]types.PublishBatchRequestEntry(nil), in.PublishBatchRequestEntries...)
	if err := p.prepare(ctx, aws.ToString(cp.TopicArn), cp.PublishBatchRequestEntries, 0); err != nil {
		return nil, err
	}
	return p.client.PublishBatch(ctx, &cp)
}

func (p *Producer) prepare(ctx context.Context, topic string, entries []types.PublishBatchRequestEntry, offset int) error {
	for i := range entries {
		e := &entries[i]
		if aws.ToString(e.Id) == "" {
			e.Id = aws.String(strconv.Itoa(offset + i))
		}
		if err := p.ids(ctx, topic, aws.ToString(e.Message), e.MessageAttributes, &e.MessageGroupId, &e.MessageDeduplicationId); err != nil {
			return err
		}
	}
	return nil
}

// EntryResult is the outcome of one entry of PublishAll.
type EntryResult struct {
	// Index is the entry's position in the PublishAll input.
	Index int
	// ID is the entry's batch ID (its index when it had none).
	ID string
	// MessageID is set on success.
	MessageID string
	// Err is set on failure: an *EntryError for a per-entry rejection, or
	// the error of the whole call the entry was part of.
	Err error
}

// EntryError is a per-entry rejection reported by SNS.
type EntryError struct {
	Code, Message string
	SenderFault   bool
}

func (e *EntryError) Error() string { return "sns: entry rejected: " + e.Code + ": " + e.Message }

// BatchResult is the outcome of PublishAll, one result per input entry in
// input order.
type BatchResult struct {
	Results []EntryResult
	// Calls is the number of PublishBatch requests made.
	Calls int
}

// Failed returns the failed entries.
func (r *BatchResult) Failed() []EntryResult {
	var out []EntryResult
	for _, e := range r.Results {
		if e.Err != nil {
			out = append(out, e)
		}
	}
	return out
}

// EntrySize is what an entry counts toward the 256 KB request limit: the
// message, subject and each attribute's name, type and value.
func EntrySize(e types.PublishBatchRequestEntry) int {
	n := len(aws.ToString(e.Message)) + len(aws.ToString(e.Subject))
	for k, v := range e.MessageAttributes {
		n += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// PublishAll publishes any number of entries to topicARN, split into
// requests of at most 10 entries and 256 KB. Entries larger than 256 KB fail
// with ErrEntryTooLarge without a call. It returns ErrEmptyInput for no
// entries; otherwise every entry's outcome is in the result, and the error
// is nil even when some entries failed.
func (p *Producer) PublishAll(ctx context.Context, topicARN string, entries []types.PublishBatchRequestEntry) (*BatchResult, error) {
	if len(entries) == 0 {
		return nil, merrors.ErrEmptyInput
	}
	work := append([]types.PublishBatchRequestEntry(nil), entries...)
	res := &BatchResult{Results: make([]EntryResult, len(work))}
	if err := p.prepare(ctx, topicARN, work, 0); err != nil {
		return nil, err
	}
	var chunk []int
	size := 0
	send := func() {
		if len(chunk) == 0 {
			return
		}
		p.send(ctx, topicARN, work, chunk, res)
		chunk, size = chunk[:0], 0
	}
	for i := range work {
		res.Results[i] = EntryResult{Index: i, ID: aws.ToString(work[i].Id)}
		s := EntrySize(work[i])
		if s > MaxBatchBytes {
			res.Results[i].Err = merrors.Wrap(merrors.ErrEntryTooLarge, fmt.Errorf("entry %d is %d bytes", i, s))
			continue
		}
		if len(chunk) == MaxBatchEntries || size+s > MaxBatchBytes {
			send()
		}
		chunk = append(chunk, i)
		size += s
	}
	send()
	return res, nil
}

func (p *Producer) send(ctx context.Context, topic string, work []types.PublishBatchRequestEntry, idx []int, res *BatchResult) {
	batch := make([]types.PublishBatchRequestEntry, len(idx))
	byID := make(map[string]int, len(idx))
	for j, i := range idx {
		batch[j] = work[i]
		byID[aws.ToString(work[i].Id)] = i
	}
	res.Calls++
	out, err := p.client.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: batch})
	if err != nil {
		for _, i := range idx {
			res.Results[i].Err = err
		}
		return
	}
	seen := make(map[int]bool, len(idx))
	for _, s := range out.Successful {
		if i, ok := byID[aws.ToString(s.Id)]; ok {
			res.Results[i].MessageID = aws.ToString(s.MessageId)
			seen[i] = true
		}
	}
	for _, f := range out.Failed {
		if i, ok := byID[aws.ToString(f.Id)]; ok {
			res.Results[i].Err = &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}
			seen[i] = true
		}
	}
	for _, i := range idx {
		if !seen[i] {
			res.Results[i].Err = &EntryError{Code: "MissingResult", Message: "SNS reported neither success nor failure"}
		}
	}
}
