package reliability_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/aws/schedulertest"
)

// faults is the one seeded source behind every fault the wrapped AWS clients
// inject, so a failing run is reproduced by its seed. Each fault kind has its own
// probability; a kind not in the table is never injected.
type faults struct {
	rates map[string]float64
	off   atomic.Bool

	mu     sync.Mutex
	rng    *rand.Rand
	counts map[string]int64
}

func newFaults(seed uint64, rates map[string]float64) *faults {
	return &faults{rates: rates, rng: rand.New(rand.NewPCG(seed, 0x5eed)), counts: map[string]int64{}}
}

// hit reports whether to inject the fault kind now, and counts it if so. A nil
// *faults injects nothing.
func (f *faults) hit(kind string) bool {
	if f == nil {
		return false
	}
	p := f.rates[kind]
	if p <= 0 || f.off.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.Float64() >= p {
		return false
	}
	f.counts[kind]++
	return true
}

func (f *faults) intN(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

func (f *faults) count(kinds ...string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, k := range kinds {
		n += f.counts[k]
	}
	return n
}

// String lists the faults injected so far, by kind.
func (f *faults) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var total int64
	parts := make([]string, 0, len(f.counts))
	for k, n := range f.counts {
		total += n
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " "))
}

// connReset is the error a client sees when the connection drops mid-call.
func connReset(op string) error {
	return &smithy.OperationError{ServiceID: "injected", OperationName: op,
		Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
}

// faultyDynamoDB throttles calls before they reach DynamoDB, drops connections,
// and loses the response of transactions that committed.
//
// Fault kinds: ddb-throttle-write (TransactWriteItems, PutItem, UpdateItem, DeleteItem), ddb-lost-write (committed,
// response lost; transactions and conditional puts), ddb-resent-write (a
// conditional put that committed is sent again, as the SDK does after a lost
// response, and the second answer returned), ddb-throttle-read (GetItem, Query,
// BatchGetItem), ddb-reset (any call, before it is sent).
type faultyDynamoDB struct {
	awsworld.DynamoDBAPI
	f          *faults
	sent, wins atomic.Int64 // TransactWriteItems calls, and those that committed
	puts       atomic.Int64 // conditional PutItem calls that committed
}

func (d *faultyDynamoDB) before(op string, throttle string) error {
	if d.f.hit(throttle) {
		return &types.ProvisionedThroughputExceededException{Message: new("injected throttle on " + op)}
	}
	if d.f.hit("ddb-reset") {
		return connReset(op)
	}
	return nil
}

func (d *faultyDynamoDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.sent.Add(1)
	if err := d.before("TransactWriteItems", "ddb-throttle-write"); err != nil {
		return nil, err
	}
	out, err := d.DynamoDBAPI.TransactWriteItems(ctx, in, opts...)
	if err == nil {
		d.wins.Add(1)
		if d.f.hit("ddb-lost-write") {
			return nil, connReset("TransactWriteItems")
		}
	}
	return out, err
}

func (d *faultyDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := d.before("GetItem", "ddb-throttle-read"); err != nil {
		return nil, err
	}
	return d.DynamoDBAPI.GetItem(ctx, in, opts...)
}

func (d *faultyDynamoDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := d.before("Query", "ddb-throttle-read"); err != nil {
		return nil, err
	}
	return d.DynamoDBAPI.Query(ctx, in, opts...)
}

func (d *faultyDynamoDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if err := d.before("BatchGetItem", "ddb-throttle-read"); err != nil {
		return nil, err
	}
	return d.DynamoDBAPI.BatchGetItem(ctx, in, opts...)
}

func (d *faultyDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := d.before("PutItem", "ddb-throttle-write"); err != nil {
		return nil, err
	}
	out, err := d.DynamoDBAPI.PutItem(ctx, in, opts...)
	if err != nil || in.ConditionExpression == nil { // only conditional puts commit appends
		return out, err
	}
	d.puts.Add(1)
	switch {
	case d.f.hit("ddb-lost-write"):
		return nil, connReset("PutItem")
	case d.f.hit("ddb-resent-write"):
		// The SDK's retry after a lost answer: the same request once more,
		// which now fails the condition the first one changed.
		return d.DynamoDBAPI.PutItem(ctx, in, opts...)
	}
	return out, nil
}

func (d *faultyDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := d.before("DeleteItem", "ddb-throttle-write"); err != nil {
		return nil, err
	}
	return d.DynamoDBAPI.DeleteItem(ctx, in, opts...)
}

func (d *faultyDynamoDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := d.before("UpdateItem", "ddb-throttle-write"); err != nil {
		return nil, err
	}
	return d.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

// faultySQS throttles SendMessage and ChangeMessageVisibility at the client, and
// loses the response of some sends that went through (so the caller sends again
// and the queue holds the message twice).
//
// Fault kinds: sqs-throttle-send, sqs-lost-send, sqs-throttle-visibility.
type faultySQS struct {
	awsworld.SQSAPI
	f *faults
}

func sqsThrottle(op string) error {
	return &smithy.OperationError{ServiceID: "SQS", OperationName: op,
		Err: &smithy.GenericAPIError{Code: "RequestThrottled", Message: "injected: rate exceeded", Fault: smithy.FaultClient}}
}

func (s *faultySQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if s.f.hit("sqs-throttle-send") {
		return nil, sqsThrottle("SendMessage")
	}
	out, err := s.SQSAPI.SendMessage(ctx, in, opts...)
	if err == nil && s.f.hit("sqs-lost-send") {
		return nil, connReset("SendMessage")
	}
	return out, err
}

func (s *faultySQS) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if s.f.hit("sqs-throttle-visibility") {
		return nil, sqsThrottle("ChangeMessageVisibility")
	}
	return s.SQSAPI.ChangeMessageVisibility(ctx, in, opts...)
}

// faultyScheduler throttles CreateSchedule and loses the response of some that
// created their schedule (the World's retry then meets a ConflictException).
//
// Fault kinds: sched-throttle, sched-lost-create.
type faultyScheduler struct {
	awsworld.SchedulerAPI
	f *faults
}

func (s *faultyScheduler) CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	if s.f.hit("sched-throttle") {
		return nil, &schedtypes.ThrottlingException{Message: new("injected throttle")}
	}
	out, err := s.SchedulerAPI.CreateSchedule(ctx, in, opts...)
	if err == nil && s.f.hit("sched-lost-create") {
		return nil, connReset("CreateSchedule")
	}
	return out, err
}

// twiceSender is what the Scheduler fake sends through: some schedules fire
// twice, the second copy outside FIFO's deduplication window (an explicit,
// different deduplication ID), as Scheduler's at-least-once delivery allows.
//
// Fault kind: sched-fired-twice.
type twiceSender struct {
	schedulertest.Sender
	f *faults
	n atomic.Int64
}

func (s *twiceSender) SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	out, err := s.Sender.SendMessage(ctx, in, opts...)
	if err != nil || !s.f.hit("sched-fired-twice") {
		return out, err
	}
	again := *in
	if in.MessageGroupId != nil {
		again.MessageDeduplicationId = new(fmt.Sprintf("fired-again-%d", s.n.Add(1)))
	}
	_, err = s.Sender.SendMessage(ctx, &again, opts...)
	return out, err
}

// schedulerClock is the Scheduler fake's clock: at times it runs ahead of the
// World's, so schedules fire early.
//
// Fault kind: sched-early.
type schedulerClock struct {
	ahead atomic.Int64 // nanoseconds
}

func (c *schedulerClock) now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// runScheduler fires due schedules until ctx ends, at uneven intervals (so
// schedules fire up to 400ms late) and at times early.
func runScheduler(ctx context.Context, s *schedulertest.Server, c *schedulerClock, f *faults) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(50+f.intN(350)) * time.Millisecond):
		}
		if f.hit("sched-early") {
			c.ahead.Store(int64(1500 * time.Millisecond))
		} else {
			c.ahead.Store(0)
		}
		_ = s.RunDue(ctx) // a failed send stays failed, as a Scheduler target error would
	}
}
