package awsworld

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/worlds"
)

// The AWS SDK clients of the integration tests keep idle HTTP connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"))
}

type nopScheduler struct{}

func (nopScheduler) CreateSchedule(context.Context, *scheduler.CreateScheduleInput, ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	return &scheduler.CreateScheduleOutput{}, nil
}
func (nopScheduler) DeleteSchedule(context.Context, *scheduler.DeleteScheduleInput, ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
	return &scheduler.DeleteScheduleOutput{}, nil
}

// fakeSQS records visibility changes and sends.
type fakeSQS struct {
	mu         sync.Mutex
	visibility []int32
	sent       []*sqs.SendMessageInput
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeSQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.visibility = append(f.visibility, in.VisibilityTimeout)
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *fakeSQS) visibilities() []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int32(nil), f.visibility...)
}

func validConfig() Config {
	return Config{BaseURL: "https://example.com/v1/workflow", TableName: "t", QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q"}
}

type flowA struct{}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	sched := &SchedulerConfig{Client: nopScheduler{}, TargetARN: "arn:aws:sqs:us-east-1:1:q", RoleARN: "arn:aws:iam::1:role/s"}
	cases := []struct {
		name  string
		mut   func(*Config)
		field string
	}{
		{"relative BaseURL", func(c *Config) { c.BaseURL = "/v1/workflow" }, "BaseURL"},
		{"missing TableName", func(c *Config) { c.TableName = "" }, "TableName"},
		{"missing QueueURL", func(c *Config) { c.QueueURL = "" }, "QueueURL"},
		{"route to unknown queue", func(c *Config) { c.Routes = worlds.Routes(worlds.Route[flowA]("nope")) }, "Routes"},
		{"route table conflict", func(c *Config) {
			c.Queues = map[string]QueueConfig{"a": {URL: "https://q/a"}, "b": {URL: "https://q/b"}}
			c.Routes = worlds.Routes(worlds.Route[flowA]("a"), worlds.Route[flowA]("b"))
		}, "Routes"},
		{"FIFO without Scheduler", func(c *Config) {
			c.Queues = map[string]QueueConfig{"o": {URL: "https://q/o.fifo", ARN: "arn:aws:sqs:us-east-1:1:o.fifo", FIFO: true}}
		}, `Queues["o"].FIFO`},
		{"FIFO without ARN", func(c *Config) {
			c.Scheduler = sched
			c.Queues = map[string]QueueConfig{"o": {URL: "https://q/o.fifo", FIFO: true}}
		}, `Queues["o"].ARN`},
		{"queue without ARN with Scheduler", func(c *Config) {
			c.Scheduler = sched
			c.Queues = map[string]QueueConfig{"b": {URL: "https://q/b"}}
		}, `Queues["b"].ARN`},
		{"queue without URL", func(c *Config) { c.Queues = map[string]QueueConfig{"b": {}} }, `Queues["b"].URL`},
		{"retention over 15m without Scheduler", func(c *Config) { c.Retention = 16 * time.Minute }, "Retention"},
		{"per-workflow retention over 15m", func(c *Config) { c.Retentions = map[string]time.Duration{"x": time.Hour} }, `Retentions["x"]`},
		{"scheduler without role", func(c *Config) { c.Scheduler = &SchedulerConfig{Client: nopScheduler{}, TargetARN: "arn"} }, "Scheduler.RoleARN"},
		{"scheduler without target", func(c *Config) { c.Scheduler = &SchedulerConfig{Client: nopScheduler{}, RoleARN: "arn"} }, "Scheduler.TargetARN"},
		{"list shards out of range", func(c *Config) { c.ListShards = 1000 }, "ListShards"},
		{"negative dead-letter retention", func(c *Config) { c.DeadLetterRetention = -time.Second }, "DeadLetterRetention"},
		{"scheduler without client", func(c *Config) { c.Scheduler = &SchedulerConfig{TargetARN: "a", RoleARN: "b"} }, "Scheduler.Client"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := validConfig()
			tc.mut(&cfg)
			_, err := New(cfg, &fakeDB{}, &fakeSQS{})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("err = %v, want *ConfigError for field %s", err, tc.field)
			}
			if !errors.Is(err, worlds.ErrInvalidArgument) {
				t.Fatalf("err = %v does not match worlds.ErrInvalidArgument", err)
			}
		})
	}
	t.Run("valid without BaseURL", func(t *testing.T) {
		t.Parallel()
		cfg := validConfig()
		cfg.BaseURL = ""
		w, err := New(cfg, &fakeDB{}, &fakeSQS{})
		if err != nil {
			t.Fatal(err)
		}
		if u, ok := w.WebhookURL("tok"); ok || u != "" {
			t.Fatalf("WebhookURL without BaseURL = %q, %v", u, ok)
		}
	})
	t.Run("valid with FIFO, routes and long retention", func(t *testing.T) {
		t.Parallel()
		cfg := validConfig()
		cfg.Scheduler = sched
		cfg.Retention = 24 * time.Hour
		cfg.Queues = map[string]QueueConfig{"o": {URL: "https://q/o.fifo", ARN: "arn:aws:sqs:us-east-1:1:o.fifo", FIFO: true}}
		cfg.Routes = worlds.Routes(worlds.Route[flowA]("o"))
		if _, err := New(cfg, &fakeDB{}, &fakeSQS{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	for count, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: 512 * time.Second, 11: 15 * time.Minute, 50: 15 * time.Minute} {
		if got := RetryDelay(count); got != want {
			t.Errorf("RetryDelay(%d) = %v, want %v", count, got, want)
		}
	}
}

// fakeDB stands in for DynamoDB in handler unit tests; it counts UpdateItem
// calls (lease renewals) and answers them with success.
type fakeDB struct {
	DynamoDBAPI
	updates atomic.Int64
}

func (f *fakeDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.updates.Add(1)
	return &dynamodb.UpdateItemOutput{}, nil
}

type funcRunner func(ctx context.Context, d worlds.Delivery) error

func (funcRunner) Workflows() []string { return []string{"wf"} }
func (f funcRunner) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	return f(ctx, d)
}

type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestHandlerHandOffAtHalfDeadline(t *testing.T) {
	t.Parallel()
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	fs := &fakeSQS{}
	cfg := validConfig()
	cfg.Clock = clock.Now
	w, err := New(cfg, &fakeDB{}, fs)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(w, funcRunner(func(context.Context, worlds.Delivery) error { return nil }))
	h.wall = clock.Now
	var processed []string
	h.processFn = func(_ context.Context, r events.SQSMessage) error {
		processed = append(processed, r.MessageId)
		clock.Add(40 * time.Second) // each message takes 40 s of a 100 s budget
		return nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(100*time.Second))
	defer cancel()
	var recs []events.SQSMessage
	for _, id := range []string{"m1", "m2", "m3", "m4"} {
		recs = append(recs, events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, EventSourceARN: "arn:aws:sqs:us-east-1:1:q"})
	}
	resp, err := h.handle(ctx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(processed, ",") != "m1,m2" {
		t.Fatalf("processed %v, want m1,m2 before the half-deadline", processed)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if strings.Join(failed, ",") != "m3,m4" {
		t.Fatalf("BatchItemFailures = %v, want m3,m4 handed off", failed)
	}
	if v := fs.visibilities(); len(v) != 2 || v[0] != 0 || v[1] != 0 {
		t.Fatalf("visibility changes = %v, want two resets to 0", v)
	}
}

func TestHandlerFailureBackoffByReceiveCount(t *testing.T) {
	t.Parallel()
	fs := &fakeSQS{}
	w, err := New(validConfig(), &fakeDB{}, fs)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(w, nil)
	h.processFn = func(_ context.Context, r events.SQSMessage) error {
		if r.MessageId == "ok" {
			return nil
		}
		return errors.New("boom")
	}
	recs := []events.SQSMessage{
		{MessageId: "a", Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSourceARN: "arn:aws:sqs:us-east-1:1:q"},
		{MessageId: "ok", EventSourceARN: "arn:aws:sqs:us-east-1:1:q"},
		{MessageId: "b", Attributes: map[string]string{"ApproximateReceiveCount": "4"}, EventSourceARN: "arn:aws:sqs:us-east-1:1:q"},
		{MessageId: "c", Attributes: map[string]string{"ApproximateReceiveCount": "30"}, EventSourceARN: "arn:aws:sqs:us-east-1:1:q"},
	}
	resp, _ := h.handle(context.Background(), events.SQSEvent{Records: recs})
	if len(resp.BatchItemFailures) != 3 {
		t.Fatalf("failures = %+v, want a, b, c", resp.BatchItemFailures)
	}
	if v := fs.visibilities(); len(v) != 3 || v[0] != 1 || v[1] != 8 || v[2] != 900 {
		t.Fatalf("visibility = %v, want [1 8 900]", v)
	}
}

func TestHandlerFIFOGroupStopsAfterFailure(t *testing.T) {
	t.Parallel()
	fs := &fakeSQS{}
	w, err := New(validConfig(), &fakeDB{}, fs)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(w, nil)
	var ran []string
	h.processFn = func(_ context.Context, r events.SQSMessage) error {
		ran = append(ran, r.MessageId)
		if r.MessageId == "g1-a" {
			return errors.New("boom")
		}
		return nil
	}
	rec := func(id, group string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Attributes: map[string]string{"MessageGroupId": group}, EventSourceARN: "arn:aws:sqs:us-east-1:1:q.fifo"}
	}
	resp, _ := h.handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec("g1-a", "g1"), rec("g2-a", "g2"), rec("g1-b", "g1")}})
	if strings.Join(ran, ",") != "g1-a,g2-a" || len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[1].ItemIdentifier != "g1-b" {
		t.Fatalf("ran %v, failures %+v: g1-b must wait behind g1-a", ran, resp.BatchItemFailures)
	}
}

func TestHeartbeatExtendsVisibility(t *testing.T) {
	t.Parallel()
	fs, db := &fakeSQS{}, &fakeDB{}
	w, err := New(validConfig(), db, fs)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(w, nil)
	ticks := make(chan time.Time)
	var gotInterval time.Duration
	h.tick = func(d time.Duration) (<-chan time.Time, func()) { gotInterval = d; return ticks, func() {} }
	stop := h.heartbeat(context.Background(), events.SQSMessage{MessageId: "m", EventSourceARN: "arn:aws:sqs:us-east-1:1:q"}, &record{ID: "d", claim: "c"})
	ticks <- time.Time{}
	ticks <- time.Time{}
	ticks <- time.Time{}
	stop()
	if gotInterval != 30*time.Second {
		t.Fatalf("heartbeat interval %v, want 30s", gotInterval)
	}
	// Each unbuffered tick is taken by the loop before the next send completes, and
	// stop waits for the loop, so all three extensions are recorded.
	if v := fs.visibilities(); len(v) != 3 || v[0] != 60 {
		t.Fatalf("visibility changes = %v, want 3 extensions to 60 s", v)
	}
	if n := db.updates.Load(); n != 3 {
		t.Fatalf("%d lease renewals, want 3", n)
	}
}

func TestQueueURLFromARN(t *testing.T) {
	t.Parallel()
	cfg := validConfig()
	cfg.Queues = map[string]QueueConfig{"b": {URL: "http://127.0.0.1:4566/000/backfill"}}
	w, err := New(cfg, &fakeDB{}, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(w, nil)
	for arn, want := range map[string]string{
		"arn:aws:sqs:us-east-1:1:q":          cfg.QueueURL,
		"arn:aws:sqs:us-east-1:000:backfill": "http://127.0.0.1:4566/000/backfill",
		"arn:aws:sqs:eu-west-1:42:other":     "https://sqs.eu-west-1.amazonaws.com/42/other",
	} {
		if got, err := h.queueURL(arn); err != nil || got != want {
			t.Errorf("queueURL(%s) = %q, %v; want %q", arn, got, err, want)
		}
	}
	if _, err := h.queueURL("arn:aws:sns:us-east-1:1:topic"); err == nil {
		t.Error("an SNS ARN must be rejected")
	}
}
