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

// Producer publishes to SNS. It is safe for concurrent use.
type Producer struct {
	client    SNSClient
	group     idgen.GroupIDGenerator
	dedup     idgen.DeduplicationIDGenerator
	bodyField string
}

// Option configures a Producer.
type Option func(*Producer)

// WithGroupIDGenerator generates MessageGroupId for FIFO topics when unset,
// from the message's attributes.
func WithGroupIDGenerator(gen idgen.GroupIDGenerator) Option {
	return func(p *Producer) { p.group = gen }
}

// WithDeduplicationIDGenerator generates MessageDeduplicationId for FIFO
// topics when unset, from the message's attributes.
func WithDeduplicationIDGenerator(gen idgen.DeduplicationIDGenerator) Option {
	return func(p *Producer) { p.dedup = gen }
}

// WithBodyField also hands the message body to the ID generators, as the
// field named name. Without it the generators see only the attributes, so
// messages with equal attributes share a group whatever their bodies.
func WithBodyField(name string) Option {
	return func(p *Producer) { p.bodyField = name }
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

// PublishInput is one message to publish. TopicARN and Message are
// required; GroupID and DeduplicationID apply to FIFO topics; Attributes are
// sent as String message attributes.
type PublishInput struct {
	Attributes      map[string]string
	TopicARN        string
	Message         string
	GroupID         string
	DeduplicationID string
}

// PublishBatchInput is up to 10 messages for one topic.
type PublishBatchInput struct {
	// TopicARN is the destination topic.
	TopicARN string
	// Messages are the entries (at most 10).
	Messages []*PublishBatchEntry
}

// PublishBatchEntry is one entry of a batch. ID must be unique within the
// batch; it defaults to the entry's index.
type PublishBatchEntry struct {
	Attributes      map[string]string
	ID              string
	Message         string
	GroupID         string
	DeduplicationID string
}

// PublishBatchOutput is the per-entry outcome of PublishBatch.
type PublishBatchOutput struct {
	// Successful are the entries SNS accepted.
	Successful []*PublishBatchSuccess
	// Failed are the entries SNS rejected.
	Failed []*PublishBatchFailure
}

// PublishBatchSuccess is an accepted entry.
type PublishBatchSuccess struct {
	// EntryID is the entry's ID.
	EntryID string
	// MessageID is the SNS MessageId.
	MessageID string
}

// PublishBatchFailure is a rejected entry; Err is an *EntryError.
type PublishBatchFailure struct {
	Err     error
	EntryID string
}

// ids fills in generated FIFO IDs. Standard topics never get generated IDs:
// SNS rejects a deduplication ID there.
func (p *Producer) ids(ctx context.Context, topicARN, body string, attrs map[string]string, group, dedup string) (string, string, error) {
	if !isFIFO(topicARN) || (group != "" || p.group == nil) && (dedup != "" || p.dedup == nil) {
		return group, dedup, nil
	}
	fields := attrs
	if p.bodyField != "" {
		fields = make(map[string]string, len(attrs)+1)
		for k, v := range attrs {
			fields[k] = v
		}
		fields[p.bodyField] = body
	}
	if group == "" && p.group != nil {
		id, err := p.group.Generate(ctx, fields)
		if err != nil {
			return "", "", fmt.Errorf("generate MessageGroupId: %w", err)
		}
		group = id
	}
	if dedup == "" && p.dedup != nil {
		id, err := p.dedup.Generate(ctx, fields)
		if err != nil {
			return "", "", fmt.Errorf("generate MessageDeduplicationId: %w", err)
		}
		dedup = id
	}
	return group, dedup, nil
}

func snsAttributes(attrs map[string]string) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		out[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// Publish publishes one message and returns its MessageId. It returns
// ErrEmptyInput for a nil input or an empty message.
func (p *Producer) Publish(ctx context.Context, in *PublishInput) (string, error) {
	if in == nil || in.Message == "" {
		return "", merrors.ErrEmptyInput
	}
	group, dedup, err := p.ids(ctx, in.TopicARN, in.Message, in.Attributes, in.GroupID, in.DeduplicationID)
	if err != nil {
		return "", err
	}
	out, err := p.client.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(in.TopicARN), Message: aws.String(in.Message),
		MessageGroupId: optional(group), MessageDeduplicationId: optional(dedup),
		MessageAttributes: snsAttributes(in.Attributes),
	})
	if err != nil {
		return "", fmt.Errorf("publish to topic %s: %w", in.TopicARN, err)
	}
	if out == nil {
		return "", nil
	}
	return aws.ToString(out.MessageId), nil
}

// PublishBatch publishes up to 10 entries in one call. It returns
// ErrEmptyInput for no entries and ErrMaxBatchSize for more than 10; a
// generator error aborts the whole batch. Every entry is in the output,
// under Successful or Failed.
func (p *Producer) PublishBatch(ctx context.Context, in *PublishBatchInput) (*PublishBatchOutput, error) {
	if in == nil || len(in.Messages) == 0 {
		return nil, merrors.ErrEmptyInput
	}
	if len(in.Messages) > MaxBatchEntries {
		return nil, merrors.ErrMaxBatchSize
	}
	entries, err := p.prepare(ctx, in.TopicARN, in.Messages)
	if err != nil {
		return nil, err
	}
	out, err := p.client.PublishBatch(ctx, &sns.PublishBatchInput{
		TopicArn: aws.String(in.TopicARN), PublishBatchRequestEntries: entries,
	})
	if err != nil {
		return nil, fmt.Errorf("publish batch to topic %s: %w", in.TopicARN, err)
	}
	res := &PublishBatchOutput{Successful: []*PublishBatchSuccess{}, Failed: []*PublishBatchFailure{}}
	if out == nil {
		out = &sns.PublishBatchOutput{}
	}
	answered := make(map[string]bool, len(entries))
	for _, s := range out.Successful {
		answered[aws.ToString(s.Id)] = true
		res.Successful = append(res.Successful, &PublishBatchSuccess{EntryID: aws.ToString(s.Id), MessageID: aws.ToString(s.MessageId)})
	}
	for _, f := range out.Failed {
		answered[aws.ToString(f.Id)] = true
		res.Failed = append(res.Failed, &PublishBatchFailure{EntryID: aws.ToString(f.Id),
			Err: &EntryError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault}})
	}
	// An entry the response does not mention was not confirmed: report it
	// as failed, as PublishAll does, so a caller that resends Failed does
	// not lose it.
	for _, e := range entries {
		if id := aws.ToString(e.Id); !answered[id] {
			res.Failed = append(res.Failed, &PublishBatchFailure{EntryID: id,
				Err: missingResult()})
		}
	}
	return res, nil
}

func (p *Producer) prepare(ctx context.Context, topic string, msgs []*PublishBatchEntry) ([]types.PublishBatchRequestEntry, error) {
	entries := make([]types.PublishBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return nil, merrors.Wrap(merrors.ErrEmptyInput, fmt.Errorf("entry %d is nil", i))
		}
		group, dedup, err := p.ids(ctx, topic, m.Message, m.Attributes, m.GroupID, m.DeduplicationID)
		if err != nil {
			return nil, err
		}
		id := m.ID
		if id == "" {
			id = strconv.Itoa(i)
		}
		entries[i] = types.PublishBatchRequestEntry{
			Id: aws.String(id), Message: aws.String(m.Message),
			MessageGroupId: optional(group), MessageDeduplicationId: optional(dedup),
			MessageAttributes: snsAttributes(m.Attributes),
		}
	}
	return entries, nil
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

func (e *EntryError) Error() string { return e.Code + ": " + e.Message }

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
// is nil even when some entries failed. On a FIFO topic, once an entry fails
// the later entries of its message group are not sent and fail with
// ErrGroupBlocked, so resending the failed entries in index order keeps each
// group in order.
func (p *Producer) PublishAll(ctx context.Context, topicARN string, msgs []*PublishBatchEntry) (*BatchResult, error) {
	if len(msgs) == 0 {
		return nil, merrors.ErrEmptyInput
	}
	work, err := p.prepare(ctx, topicARN, msgs)
	if err != nil {
		return nil, err
	}
	res := &BatchResult{Results: make([]EntryResult, len(work))}
	// On a FIFO topic a failed entry holds back the later entries of its
	// message group: published now, they would be ahead of it once the caller
	// publishes it again, and the subscribers would see the group out of
	// order. They fail with ErrGroupBlocked so the caller resends them after
	// the failed one.
	var failed map[string]int // group -> index of its first failed entry
	fifo := isFIFO(topicARN)
	var chunk []int
	size := 0
	send := func() {
		if len(chunk) == 0 {
			return
		}
		p.send(ctx, topicARN, work, chunk, res)
		if fifo {
			for _, i := range chunk {
				if res.Results[i].Err != nil {
					failed = markFailed(failed, work[i], i)
				}
			}
		}
		chunk, size = chunk[:0], 0
	}
	for i := range work {
		res.Results[i] = EntryResult{Index: i, ID: aws.ToString(work[i].Id)}
		s := EntrySize(work[i])
		if s > MaxBatchBytes {
			res.Results[i].Err = merrors.Wrap(merrors.ErrEntryTooLarge, fmt.Errorf("entry %d is %d bytes", i, s))
			if fifo {
				failed = markFailed(failed, work[i], i)
			}
			continue
		}
		if len(chunk) == MaxBatchEntries || size+s > MaxBatchBytes {
			send()
		}
		// Checked after the send above, so the outcome of the request just
		// made counts.
		if first, ok := failed[aws.ToString(work[i].MessageGroupId)]; ok {
			res.Results[i].Err = merrors.Wrap(merrors.ErrGroupBlocked, fmt.Errorf("entry %d follows failed entry %d of group %q",
				i, first, aws.ToString(work[i].MessageGroupId)))
			continue
		}
		chunk = append(chunk, i)
		size += s
	}
	send()
	return res, nil
}

// missingResult is the failure of an entry a PublishBatch response lists
// neither as successful nor as failed: it was not confirmed.
func missingResult() *EntryError {
	return &EntryError{Code: "MissingResult", Message: "SNS reported neither success nor failure"}
}

// markFailed records that entry i of e's message group failed, keeping the
// group's first failure.
func markFailed(failed map[string]int, e types.PublishBatchRequestEntry, i int) map[string]int {
	if failed == nil {
		failed = make(map[string]int)
	}
	g := aws.ToString(e.MessageGroupId)
	if _, ok := failed[g]; !ok {
		failed[g] = i
	}
	return failed
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
			res.Results[i].Err = missingResult()
		}
	}
}
