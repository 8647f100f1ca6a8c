package fake

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/cairn-go/cairn/messaging/consumer"
)

var _ consumer.SchedulerClient = (*SchedulerClient)(nil)

// SchedulerClient is a consumer.SchedulerClient whose CreateSchedule records
// its input and calls CreateScheduleFunc; a nil field answers a nil output and
// a nil error. It is safe for concurrent use.
type SchedulerClient struct {
	CreateScheduleFunc func(ctx context.Context, params *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)

	create calls[*scheduler.CreateScheduleInput]
}

// CreateSchedule records params and calls CreateScheduleFunc.
func (c *SchedulerClient) CreateSchedule(ctx context.Context, params *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	return call(ctx, &c.create, c.CreateScheduleFunc, params, optFns)
}

// CreateScheduleCalls returns the inputs of CreateSchedule, in call order.
func (c *SchedulerClient) CreateScheduleCalls() []*scheduler.CreateScheduleInput {
	return c.create.list()
}
