package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	stypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/router"
)

// RetryCountAttribute is the message attribute carrying the number of
// scheduled retries already made.
const RetryCountAttribute = "retry_count"

// SendMessageTarget is the EventBridge Scheduler universal target used for
// retries: unlike the templated SQS target it lets the schedule set message
// attributes and an explicit MessageDeduplicationId.
const SendMessageTarget = "arn:aws:scheduler:::aws-sdk:sqs:sendMessage"

// ScheduledSendMessage is the JSON Input of a retry schedule: the parameters
// of the SQS SendMessage call EventBridge Scheduler makes when it fires.
type ScheduledSendMessage struct {
	QueueUrl               string                             `json:"QueueUrl"`
	MessageBody            string                             `json:"MessageBody"`
	MessageGroupId         string                             `json:"MessageGroupId,omitempty"`
	MessageDeduplicationId string                             `json:"MessageDeduplicationId,omitempty"`
	MessageAttributes      map[string]ScheduledAttributeValue `json:"MessageAttributes,omitempty"`
}

// ScheduledAttributeValue is one message attribute in ScheduledSendMessage.
type ScheduledAttributeValue struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

// Limits a scheduled retry or dead letter must fit, or the send is rejected
// after the original is gone: the SQS limits of the queue it is sent to (1
// MiB per message since 2025, 10 attributes), and for a retry also
// EventBridge Scheduler's limit on a schedule's input, which carries the
// whole SendMessage request as JSON (the body escaped, binary attributes in
// base64).
const (
	maxMessageAttributes  = 10
	maxMessageBytes       = 1024 * 1024
	maxIDLength           = 128
	maxScheduleInputBytes = 256 * 1024
)

// retryMarker ends the MessageDeduplicationId of a scheduled retry, followed
// by the retry number. It carries the retry count when the message has no
// room for the retry_count attribute (SQS allows 10 attributes).
const retryMarker = "~retry-"

// errRetryDoesNotFit reports a retry SQS would reject once the schedule fires.
var errRetryDoesNotFit = errors.New("scheduled retry would exceed the SQS message limits")

// Sender is the SQS call the Scheduled Retry model makes to dead-letter a
// message.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Decision is what the Scheduled Retry model did with a failed message.
type Decision int

const (
	// Keep: the retry or dead letter could not be created; the message must
	// stay in the queue (its visibility lapses, or InPlace applies).
	Keep Decision = iota
	// Retried: a retry schedule exists; delete the original.
	Retried
	// DeadLettered: the message is in the DLQ; delete the original.
	DeadLettered
	// InPlace: the retry would not fit the SQS limits; keep the original and
	// retry it in place after Outcome.Delay.
	InPlace
)

// Outcome is the result of Retrier.Fail.
type Outcome struct {
	Decision Decision
	// Delay is the backoff before the retry (Retried, InPlace).
	Delay time.Duration
	// RetryCount is the number of scheduled retries made before this one.
	RetryCount int
	// Err is why a retry or dead letter was not made (Keep, InPlace).
	Err error
}

// Retrier carries out the Scheduled Retry model for one failed message: it
// creates the retry schedule or sends the message to the DLQ, and reports
// whether the original may be deleted. The consumer and the lambda adapter
// share it.
type Retrier struct {
	Config    router.ScheduledRetryConfig
	Scheduler SchedulerClient
	SQS       Sender
	// Now is the clock of the schedule fire times (default time.Now).
	Now func() time.Time
}

// Fail handles msg whose handler failed with err, classified as class with
// a requested delay (BackoffRequested).
func (r *Retrier) Fail(ctx context.Context, msg *types.Message, class merrors.Class, delay time.Duration) Outcome {
	current := retryCount(msg)
	next := current + 1
	if class == merrors.FatalClass || next > r.Config.MaxRetryCount {
		if err := publishDLQ(ctx, r.SQS, msg, r.Config, current); err != nil {
			return Outcome{Decision: Keep, RetryCount: current, Err: merrors.Wrap(merrors.ErrDLQPublish, err)}
		}
		return Outcome{Decision: DeadLettered, RetryCount: current}
	}
	if class != merrors.BackoffRequested {
		delay = router.ExpBackoff(r.Config.BaseBackoff, r.Config.MaxBackoff, next)
	}
	delay = min(max(delay, time.Millisecond), 24*time.Hour)
	in, err := retryMessage(msg, r.Config, next)
	if err != nil {
		// Retried in place, the message keeps its ID and cannot carry a
		// count, so each receive after the first was a retry. Without
		// counting them it would be retried in place for ever and never
		// reach the DLQ.
		if made := current + receiveCount(msg) - 1; made+1 > r.Config.MaxRetryCount {
			if err := publishDLQ(ctx, r.SQS, msg, r.Config, made); err != nil {
				return Outcome{Decision: Keep, RetryCount: made, Err: merrors.Wrap(merrors.ErrDLQPublish, err)}
			}
			return Outcome{Decision: DeadLettered, RetryCount: made}
		}
		return Outcome{Decision: InPlace, Delay: delay, RetryCount: current, Err: err}
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if err := schedule(ctx, r.Scheduler, msg, r.Config, in, next, now().Add(delay)); err != nil {
		return Outcome{Decision: Keep, Delay: delay, RetryCount: current, Err: merrors.Wrap(merrors.ErrRetryScheduleCreate, err)}
	}
	return Outcome{Decision: Retried, Delay: delay, RetryCount: current}
}

// receiveCount is the message's ApproximateReceiveCount, at least 1.
func receiveCount(msg *types.Message) int {
	n, err := strconv.Atoi(msg.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func stringAttr(msg *types.Message, name string) (string, bool) {
	v, ok := msg.MessageAttributes[name]
	if !ok || v.StringValue == nil {
		return "", false
	}
	return *v.StringValue, true
}

// retryCount is the number of scheduled retries already made: the retry_count
// attribute, or else the count carried in the deduplication ID.
func retryCount(msg *types.Message) int {
	if v, ok := stringAttr(msg, RetryCountAttribute); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
		return 0
	}
	dedup := msg.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]
	if i := strings.LastIndex(dedup, retryMarker); i >= 0 {
		if n, err := strconv.Atoi(dedup[i+len(retryMarker):]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

func (c *Consumer) scheduledOutcome(ctx context.Context, d *delivery, err error, class merrors.Class,
	delay time.Duration) (bool, int32) {
	out := c.retrier.Fail(ctx, d.msg, class, delay)
	log := c.cfg.log.With(slog.String("route", c.name), slog.String("message_id", d.ID()),
		slog.Int("retry_count", out.RetryCount), slog.Any("error", err))
	switch out.Decision {
	case Keep:
		msg := "failed to create retry schedule; retaining message"
		if errors.Is(out.Err, merrors.ErrDLQPublish) {
			msg = "failed to publish message to DLQ; retaining message"
		}
		c.cfg.log.LogAttrs(ctx, slog.LevelError, msg, append(c.messageAttrs(d), slog.Int("retry_count", out.RetryCount),
			slog.Any("error", out.Err), slog.Any("handler_error", err))...)
		c.finish(d)
		return true, -1
	case InPlace:
		// The retry cannot be carried: keep the original and retry it in
		// place after the backoff, as the Visibility model would.
		timeout := c.capVisibility(d, out.Delay)
		log.Error("retry does not fit SQS limits; retrying in place", slog.Any("retry_error", out.Err))
		c.finishVisibility(d, timeout)
		return true, timeout
	case DeadLettered:
		log.Error("message dead-lettered")
		if c.cfg.deadMetric != nil {
			c.cfg.deadMetric(c.name)
		}
	case Retried:
		log.Warn("retry scheduled", slog.Duration("delay", out.Delay))
		if c.cfg.retryMetric != nil {
			c.cfg.retryMetric(c.name)
		}
	}
	// The retry or dead letter exists: delete the original to free the group.
	h := d.msg.ReceiptHandle
	c.finishHeld(d)
	c.ack.delete(h, false)
	return false, 0
}

// retryMessage builds the SendMessage a retry schedule makes. It returns
// errRetryDoesNotFit when SQS would reject it: the original is only deleted
// once its retry is known to be deliverable.
func retryMessage(msg *types.Message, cfg router.ScheduledRetryConfig, next int) (ScheduledSendMessage, error) {
	url, err := router.QueueURLFromARN(cfg.TargetQueueARN)
	if err != nil {
		return ScheduledSendMessage{}, err
	}
	fifo := strings.HasSuffix(cfg.TargetQueueARN, ".fifo")
	in := ScheduledSendMessage{
		QueueUrl:          url,
		MessageBody:       aws.ToString(msg.Body),
		MessageAttributes: make(map[string]ScheduledAttributeValue, len(msg.MessageAttributes)+1),
	}
	id := aws.ToString(msg.MessageId)
	if fifo {
		in.MessageGroupId = msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if in.MessageGroupId == "" {
			in.MessageGroupId = id
		}
		in.MessageDeduplicationId = dedupID(id, retryMarker+strconv.Itoa(next))
	}
	size := len(in.MessageBody)
	for k, v := range msg.MessageAttributes {
		if k == RetryCountAttribute {
			continue
		}
		in.MessageAttributes[k] = ScheduledAttributeValue{DataType: aws.ToString(v.DataType),
			StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
		size += attrSize(k, v)
	}
	count := types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(next))}
	if len(in.MessageAttributes) < maxMessageAttributes && size+attrSize(RetryCountAttribute, count) <= maxMessageBytes {
		in.MessageAttributes[RetryCountAttribute] = ScheduledAttributeValue{DataType: "Number", StringValue: strconv.Itoa(next)}
		if scheduleInputSize(in) <= maxScheduleInputBytes {
			return in, nil
		}
		delete(in.MessageAttributes, RetryCountAttribute)
	}
	// No room for retry_count: a FIFO retry carries the count in its
	// deduplication ID; a standard queue has nowhere to carry it.
	if !fifo {
		return ScheduledSendMessage{}, fmt.Errorf("%w: %d attributes, %d bytes and a %d-byte schedule input leave no room for %s on a standard queue",
			errRetryDoesNotFit, len(in.MessageAttributes), size, scheduleInputSize(in), RetryCountAttribute)
	}
	if n := scheduleInputSize(in); len(in.MessageAttributes) > maxMessageAttributes || size > maxMessageBytes || n > maxScheduleInputBytes {
		return ScheduledSendMessage{}, fmt.Errorf("%w: %d attributes, %d bytes, a %d-byte schedule input (limit %d)",
			errRetryDoesNotFit, len(in.MessageAttributes), size, n, maxScheduleInputBytes)
	}
	return in, nil
}

// scheduleInputSize is the length of in as a schedule's input.
func scheduleInputSize(in ScheduledSendMessage) int {
	b, err := json.Marshal(in)
	if err != nil {
		return maxScheduleInputBytes + 1
	}
	return len(b)
}

func attrSize(name string, v types.MessageAttributeValue) int {
	return len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
}

func schedule(ctx context.Context, client SchedulerClient, msg *types.Message, cfg router.ScheduledRetryConfig,
	in ScheduledSendMessage, next int, fireAt time.Time) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	// Schedules fire at second granularity: round up so the delay holds.
	at := fireAt.UTC().Add(time.Second - 1).Truncate(time.Second)
	_, err = client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(scheduleName(aws.ToString(msg.MessageId), next)),
		ScheduleExpression:         aws.String("at(" + at.Format("2006-01-02T15:04:05") + ")"),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &stypes.FlexibleTimeWindow{Mode: stypes.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      stypes.ActionAfterCompletionDelete,
		Target:                     retryTarget(cfg, body),
	})
	var conflict *stypes.ConflictException
	if errors.As(err, &conflict) {
		// A redelivered original already scheduled this attempt.
		return nil
	}
	return err
}

// retryTarget is a retry schedule's target: SendMessage of in, with the
// route's scheduler dead-letter queue, if any, for a copy Scheduler cannot
// deliver.
func retryTarget(cfg router.ScheduledRetryConfig, in []byte) *stypes.Target {
	t := &stypes.Target{
		Arn:     aws.String(SendMessageTarget),
		RoleArn: aws.String(cfg.ExecutionRoleARN),
		Input:   aws.String(string(in)),
	}
	if cfg.SchedulerDeadLetterARN != "" {
		t.DeadLetterConfig = &stypes.DeadLetterConfig{Arn: aws.String(cfg.SchedulerDeadLetterARN)}
	}
	return t
}

// publishDLQ sends an exhausted message to the scheduled-retry DLQ with its
// attributes and, when there is room, retry_count. SQS allows 10 attributes:
// a message that already has 10 keeps them all and goes without retry_count
// rather than being rejected.
func publishDLQ(ctx context.Context, client Sender, msg *types.Message, cfg router.ScheduledRetryConfig, retries int) error {
	attrs := make(map[string]types.MessageAttributeValue, len(msg.MessageAttributes)+1)
	size := len(aws.ToString(msg.Body))
	for k, v := range msg.MessageAttributes {
		if k == RetryCountAttribute {
			continue
		}
		attrs[k] = v
		size += attrSize(k, v)
	}
	count := types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(retries))}
	if len(attrs) < maxMessageAttributes && size+attrSize(RetryCountAttribute, count) <= maxMessageBytes {
		attrs[RetryCountAttribute] = count
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(cfg.DLQQueueURL),
		MessageBody:       msg.Body,
		MessageAttributes: attrs,
	}
	if strings.HasSuffix(cfg.DLQQueueURL, ".fifo") {
		id := aws.ToString(msg.MessageId)
		g := msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if g == "" {
			g = id
		}
		in.MessageGroupId = aws.String(g)
		in.MessageDeduplicationId = aws.String(dedupID(id, "~dlq"))
	}
	_, err := client.SendMessage(ctx, in)
	return err
}

func dedupID(id, suffix string) string {
	s := sanitize(id) + suffix
	if len(s) > 128 {
		s = s[len(s)-128:]
	}
	return s
}

// scheduleName is unique per message and attempt, so a redelivered original
// creating its schedule again fails with a conflict instead of doubling up.
func scheduleName(id string, next int) string {
	suffix := "-" + strconv.Itoa(next)
	id = sanitize(id)
	if max := 64 - len("cairn-") - len(suffix); len(id) > max {
		id = id[len(id)-max:]
	}
	return "cairn-" + id + suffix
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
