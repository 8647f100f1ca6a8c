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

// SQS limits a scheduled retry or dead letter must fit, or SQS rejects the
// send after the original is gone.
const (
	maxMessageAttributes = 10
	maxMessageBytes      = 256 * 1024
	maxIDLength          = 128
)

// retryMarker ends the MessageDeduplicationId of a scheduled retry, followed
// by the retry number. It carries the retry count when the message has no
// room for the retry_count attribute (SQS allows 10 attributes).
const retryMarker = "~retry-"

// errRetryDoesNotFit reports a retry SQS would reject once the schedule fires.
var errRetryDoesNotFit = errors.New("scheduled retry would exceed the SQS message limits")

// retryCount is the number of scheduled retries already made: the retry_count
// attribute, or else the count carried in the deduplication ID.
func retryCount(d *delivery) int {
	if v, ok := d.attr(RetryCountAttribute); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
		return 0
	}
	dedup := d.SystemAttributeByKey(string(types.MessageSystemAttributeNameMessageDeduplicationId))
	if i := strings.LastIndex(dedup, retryMarker); i >= 0 {
		if n, err := strconv.Atoi(dedup[i+len(retryMarker):]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

func (c *Consumer) scheduledOutcome(ctx context.Context, d *delivery, err error, class merrors.Class,
	delay time.Duration, cfg router.ScheduledRetryConfig) (bool, int32) {
	current := retryCount(d)
	next := current + 1
	log := c.cfg.log.With(slog.String("route", c.name), slog.String("message_id", d.ID()),
		slog.Int("retry_count", current), slog.Any("error", err))
	if class == merrors.FatalClass || next > cfg.MaxRetryCount {
		if perr := c.publishDLQ(ctx, d, cfg, current); perr != nil {
			log.Error("dead-letter publish failed; message left in queue", slog.Any("publish_error", perr))
			c.finish(d)
			return true, -1
		}
		log.Error("message dead-lettered")
		if c.cfg.deadMetric != nil {
			c.cfg.deadMetric(c.name)
		}
	} else {
		if class != merrors.BackoffRequested {
			delay = router.ExpBackoff(cfg.BaseBackoff, cfg.MaxBackoff, next)
		}
		delay = min(max(delay, time.Millisecond), 24*time.Hour)
		in, rerr := retryMessage(d, cfg, next)
		if rerr != nil {
			// The retry cannot be carried: keep the original and retry it
			// in place after the backoff, as the Visibility model would.
			timeout := c.capVisibility(d, delay)
			log.Error("retry does not fit SQS limits; retrying in place", slog.Any("schedule_error", rerr))
			c.finishVisibility(d, timeout)
			return true, timeout
		}
		if serr := c.schedule(ctx, d, cfg, in, next, delay); serr != nil {
			log.Error("retry schedule failed; message left in queue", slog.Any("schedule_error", serr))
			c.finish(d)
			return true, -1
		}
		log.Warn("retry scheduled", slog.Duration("delay", delay))
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
func retryMessage(d *delivery, cfg router.ScheduledRetryConfig, next int) (ScheduledSendMessage, error) {
	url, err := router.QueueURLFromARN(cfg.TargetQueueARN)
	if err != nil {
		return ScheduledSendMessage{}, err
	}
	fifo := strings.HasSuffix(cfg.TargetQueueARN, ".fifo")
	in := ScheduledSendMessage{
		QueueUrl:          url,
		MessageBody:       aws.ToString(d.msg.Body),
		MessageAttributes: make(map[string]ScheduledAttributeValue, len(d.msg.MessageAttributes)+1),
	}
	if fifo {
		in.MessageGroupId = d.GroupID()
		if in.MessageGroupId == "" {
			in.MessageGroupId = d.ID()
		}
		in.MessageDeduplicationId = dedupID(d.ID(), retryMarker+strconv.Itoa(next))
	}
	size := len(in.MessageBody)
	for k, v := range d.msg.MessageAttributes {
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
		return in, nil
	}
	// No room for retry_count: a FIFO retry carries the count in its
	// deduplication ID; a standard queue has nowhere to carry it.
	if !fifo {
		return ScheduledSendMessage{}, fmt.Errorf("%w: %d attributes and %d bytes leave no room for %s on a standard queue",
			errRetryDoesNotFit, len(in.MessageAttributes), size, RetryCountAttribute)
	}
	if len(in.MessageAttributes) > maxMessageAttributes || size > maxMessageBytes {
		return ScheduledSendMessage{}, fmt.Errorf("%w: %d attributes, %d bytes", errRetryDoesNotFit, len(in.MessageAttributes), size)
	}
	return in, nil
}

func attrSize(name string, v types.MessageAttributeValue) int {
	return len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
}

func (c *Consumer) schedule(ctx context.Context, d *delivery, cfg router.ScheduledRetryConfig, in ScheduledSendMessage, next int, delay time.Duration) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	// Schedules fire at second granularity: round up so the delay holds.
	at := c.cfg.clock.Now().Add(delay).UTC().Add(time.Second - 1).Truncate(time.Second)
	_, err = c.cfg.scheduler.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(scheduleName(d.ID(), next)),
		ScheduleExpression:         aws.String("at(" + at.Format("2006-01-02T15:04:05") + ")"),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &stypes.FlexibleTimeWindow{Mode: stypes.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      stypes.ActionAfterCompletionDelete,
		Target: &stypes.Target{
			Arn:     aws.String(SendMessageTarget),
			RoleArn: aws.String(cfg.ExecutionRoleARN),
			Input:   aws.String(string(body)),
		},
	})
	var conflict *stypes.ConflictException
	if errors.As(err, &conflict) {
		// A redelivered original already scheduled this attempt.
		return nil
	}
	return err
}

// publishDLQ sends an exhausted message to the scheduled-retry DLQ with its
// attributes and, when there is room, retry_count. SQS allows 10 attributes:
// a message that already has 10 keeps them all and goes without retry_count
// rather than being rejected.
func (c *Consumer) publishDLQ(ctx context.Context, d *delivery, cfg router.ScheduledRetryConfig, retries int) error {
	attrs := make(map[string]types.MessageAttributeValue, len(d.msg.MessageAttributes)+1)
	size := len(aws.ToString(d.msg.Body))
	for k, v := range d.msg.MessageAttributes {
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
		MessageBody:       d.msg.Body,
		MessageAttributes: attrs,
	}
	if strings.HasSuffix(cfg.DLQQueueURL, ".fifo") {
		g := d.GroupID()
		if g == "" {
			g = d.ID()
		}
		in.MessageGroupId = aws.String(g)
		in.MessageDeduplicationId = aws.String(dedupID(d.ID(), "~dlq"))
	}
	_, err := c.client.SendMessage(ctx, in)
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
