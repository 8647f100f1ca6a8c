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
	StringValue string `json:"StringValue"`
}

// QueueURLFromARN turns arn:aws:sqs:REGION:ACCOUNT:NAME into the queue URL.
func QueueURLFromARN(arn string) (string, error) {
	p := strings.Split(arn, ":")
	if len(p) != 6 || p[0] != "arn" || p[2] != "sqs" || p[3] == "" || p[4] == "" || p[5] == "" {
		return "", fmt.Errorf("not an SQS queue ARN: %q", arn)
	}
	host := "sqs." + p[3] + ".amazonaws.com"
	if p[1] == "aws-cn" {
		host += ".cn"
	}
	return "https://" + host + "/" + p[4] + "/" + p[5], nil
}

func (c *Consumer) scheduledOutcome(ctx context.Context, d *delivery, err error, class merrors.Class,
	delay time.Duration, cfg router.ScheduledRetry) (bool, int32) {
	current := 0
	if v, ok := d.Attribute(RetryCountAttribute); ok {
		if n, perr := strconv.Atoi(v); perr == nil && n > 0 {
			current = n
		}
	}
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
			delay = cfg.Delay(next)
		}
		delay = min(max(delay, time.Millisecond), 24*time.Hour)
		if serr := c.schedule(ctx, d, cfg, next, delay); serr != nil {
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

func (c *Consumer) schedule(ctx context.Context, d *delivery, cfg router.ScheduledRetry, next int, delay time.Duration) error {
	url, err := QueueURLFromARN(cfg.TargetQueueARN)
	if err != nil {
		return err
	}
	in := ScheduledSendMessage{
		QueueUrl:               url,
		MessageBody:            aws.ToString(d.msg.Body),
		MessageGroupId:         d.GroupID(),
		MessageDeduplicationId: dedupID(d.ID(), "r"+strconv.Itoa(next)),
		MessageAttributes:      map[string]ScheduledAttributeValue{},
	}
	for k, v := range d.msg.MessageAttributes {
		if v.StringValue != nil && k != RetryCountAttribute {
			in.MessageAttributes[k] = ScheduledAttributeValue{DataType: aws.ToString(v.DataType), StringValue: *v.StringValue}
		}
	}
	in.MessageAttributes[RetryCountAttribute] = ScheduledAttributeValue{DataType: "Number", StringValue: strconv.Itoa(next)}
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

func (c *Consumer) publishDLQ(ctx context.Context, d *delivery, cfg router.ScheduledRetry, retries int) error {
	attrs := make(map[string]types.MessageAttributeValue, len(d.msg.MessageAttributes)+1)
	for k, v := range d.msg.MessageAttributes {
		attrs[k] = v
	}
	attrs[RetryCountAttribute] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(retries))}
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
		in.MessageDeduplicationId = aws.String(dedupID(d.ID(), "dlq"))
	}
	_, err := c.client.SendMessage(ctx, in)
	return err
}

func dedupID(id, suffix string) string {
	s := sanitize(id) + "-" + suffix
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
