package messagingtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	stypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/messaging/consumer"
)

// Sender is the SQS call a fired schedule makes.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Scheduler is a fake EventBridge Scheduler for the consumer's retry
// schedules: it validates and records CreateSchedule calls and, on Fire,
// performs the scheduled SQS SendMessage through Sender (the in-memory SQS or
// an emulator client).
type Scheduler struct {
	mu        sync.Mutex
	sender    Sender
	schedules map[string]*scheduler.CreateScheduleInput
	fired     map[string]bool
	// Err, when set, is returned by CreateSchedule.
	Err error
}

// MaxScheduleInputBytes is the EventBridge Scheduler limit on a schedule's
// target input (256 KB) that the fake enforces.
const MaxScheduleInputBytes = 256 * 1024

// NewScheduler returns a fake delivering through sender.
func NewScheduler(sender Sender) *Scheduler {
	return &Scheduler{sender: sender, schedules: map[string]*scheduler.CreateScheduleInput{}, fired: map[string]bool{}}
}

// CreateSchedule implements consumer.SchedulerClient.
func (s *Scheduler) CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err != nil {
		return nil, s.Err
	}
	name := aws.ToString(in.Name)
	switch {
	case name == "" || len(name) > 64:
		return nil, &stypes.ValidationException{Message: aws.String("bad name " + name)}
	case in.Target == nil || aws.ToString(in.Target.Arn) == "" || aws.ToString(in.Target.RoleArn) == "":
		return nil, &stypes.ValidationException{Message: aws.String("target and role required")}
	case in.FlexibleTimeWindow == nil:
		return nil, &stypes.ValidationException{Message: aws.String("FlexibleTimeWindow required")}
	case len(aws.ToString(in.Target.Input)) > MaxScheduleInputBytes:
		return nil, &stypes.ValidationException{Message: aws.String(fmt.Sprintf("target input of %d bytes exceeds %d",
			len(aws.ToString(in.Target.Input)), MaxScheduleInputBytes))}
	}
	if _, err := fireTime(in); err != nil {
		return nil, &stypes.ValidationException{Message: aws.String(err.Error())}
	}
	if _, ok := s.schedules[name]; ok {
		return nil, &stypes.ConflictException{Message: aws.String("schedule exists: " + name)}
	}
	s.schedules[name] = in
	return &scheduler.CreateScheduleOutput{ScheduleArn: aws.String("arn:aws:scheduler:us-east-1:000000000000:schedule/default/" + name)}, nil
}

func fireTime(in *scheduler.CreateScheduleInput) (time.Time, error) {
	var ts string
	if _, err := fmt.Sscanf(aws.ToString(in.ScheduleExpression), "at(%19s)", &ts); err != nil {
		return time.Time{}, fmt.Errorf("bad expression %q", aws.ToString(in.ScheduleExpression))
	}
	return time.Parse("2006-01-02T15:04:05", ts)
}

// Schedules returns the created schedules (fired or not), sorted by name.
func (s *Scheduler) Schedules() []*scheduler.CreateScheduleInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*scheduler.CreateScheduleInput, 0, len(s.schedules))
	for _, in := range s.schedules {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return *out[i].Name < *out[j].Name })
	return out
}

// Fire sends every unfired schedule due at or before now, with queueURL
// overriding the URL in the schedule input when not empty (emulators use
// their own URLs). It returns how many it fired.
func (s *Scheduler) Fire(ctx context.Context, now time.Time, queueURL string) (int, error) {
	s.mu.Lock()
	var due []*scheduler.CreateScheduleInput
	for name, in := range s.schedules {
		at, _ := fireTime(in)
		if !s.fired[name] && !at.After(now.UTC()) {
			due = append(due, in)
			s.fired[name] = true
		}
	}
	s.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return *due[i].Name < *due[j].Name })
	for _, in := range due {
		if aws.ToString(in.Target.Arn) != consumer.SendMessageTarget {
			return 0, fmt.Errorf("unsupported target %s", aws.ToString(in.Target.Arn))
		}
		var msg consumer.ScheduledSendMessage
		if err := json.Unmarshal([]byte(aws.ToString(in.Target.Input)), &msg); err != nil {
			return 0, err
		}
		url := msg.QueueUrl
		if queueURL != "" {
			url = queueURL
		}
		send := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(msg.MessageBody),
			MessageAttributes: map[string]types.MessageAttributeValue{}}
		if msg.MessageGroupId != "" {
			send.MessageGroupId = aws.String(msg.MessageGroupId)
		}
		if msg.MessageDeduplicationId != "" {
			send.MessageDeduplicationId = aws.String(msg.MessageDeduplicationId)
		}
		for k, v := range msg.MessageAttributes {
			av := types.MessageAttributeValue{DataType: aws.String(v.DataType), BinaryValue: v.BinaryValue}
			if v.BinaryValue == nil {
				av.StringValue = aws.String(v.StringValue)
			}
			send.MessageAttributes[k] = av
		}
		if _, err := s.sender.SendMessage(ctx, send); err != nil {
			return 0, err
		}
	}
	return len(due), nil
}
