package awsworld

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
)

// MaxSQSDelay is the longest delay SQS applies to a message; deliveries due later
// go through EventBridge Scheduler.
const MaxSQSDelay = 15 * time.Minute

// DefaultDeadLetterRetention is Config.DeadLetterRetention when it is zero: 14
// days, SQS's longest message retention and the Terraform module's default.
const DefaultDeadLetterRetention = 14 * 24 * time.Hour

// maxListShards bounds Config.ListShards: a listing queries every shard.
const maxListShards = 256

// Config configures a [World]. TableName and QueueURL are required.
// [ConfigFromEnv] builds one from the Terraform module's environment output.
type Config struct {
	// BaseURL is the public URL of HTTP(world) or Webhook(world), including
	// /v1/workflow. Optional: when set, hooks expose their webhook URL
	// <BaseURL>/webhooks/<token> ([World.WebhookURL]).
	BaseURL string
	// TableName is the DynamoDB table, laid out as [CreateTable] creates it.
	TableName string
	// QueueURL is the SQS standard queue carrying deliveries of unrouted workflows.
	QueueURL string
	// Queues are further queues by name, standard or FIFO, for Routes.
	Queues map[string]QueueConfig
	// Routes sends the runs of a workflow to one of Queues.
	Routes worlds.RouteTable
	// Scheduler delivers work due more than 15 minutes ahead, and every delayed
	// delivery to a FIFO queue. Optional.
	Scheduler *SchedulerConfig
	// Retention is how long finished runs are kept; zero keeps them forever.
	// Over 15 minutes requires Scheduler.
	Retention time.Duration
	// Retentions overrides Retention per workflow name.
	Retentions map[string]time.Duration

	// ListShards is how many partitions of each list index the run and hook
	// listings and the queue records are spread over; zero uses
	// DefaultListShards, at most 256. Listings read every shard, so keep it
	// small. It may be changed in either direction, also while Worlds with the
	// old and the new value share the table: the table records the highest
	// value any World wrote with, and listings and Sweep read that many shards
	// (so lowering it does not make listings cheaper).
	ListShards int

	// DeadLetterRetention is how long a delivery that was received and then lost
	// (most often: moved to the dead-letter queue after max_receive_count) is
	// left for its dead-letter queue before [World.Sweep] sends it again. Zero
	// uses DefaultDeadLetterRetention, the module's message retention.
	DeadLetterRetention time.Duration

	// Lease is how long the Queue handler holds a delivery it is executing
	// against other receivers of the same delivery (SQS duplicates), and the
	// visibility its heartbeat gives the message, renewing both every Lease/2. A
	// worker that dies releases its deliveries after at most Lease. Zero uses
	// DefaultLease; at least 2 seconds, at most 12 hours (SQS's visibility limit).
	Lease time.Duration

	// env is what the deployment ConfigFromEnv read from can do; nil for a
	// Config built by hand.
	env *envGrants

	// Clock returns the current time; nil uses time.Now.
	Clock func() time.Time
	// NewID generates delivery IDs; nil uses random 26-character IDs.
	NewID func() string
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
}

// QueueConfig describes a routed SQS queue.
type QueueConfig struct {
	// URL is the queue URL. Required.
	URL string
	// ARN is the queue ARN, the Scheduler target for deliveries due later.
	// Required when Scheduler is set or the queue is FIFO.
	ARN string
	// FIFO marks a FIFO queue: one delivery of a run at a time.
	FIFO bool
}

// SchedulerConfig configures EventBridge Scheduler for long delays.
type SchedulerConfig struct {
	// Client calls EventBridge Scheduler. Required.
	Client SchedulerAPI
	// Group is the schedule group; empty uses "default".
	Group string
	// TargetARN is the ARN of the queue at QueueURL. Required.
	TargetARN string
	// RoleARN is the role Scheduler assumes to send to the queue. Required.
	RoleARN string
}

// DynamoDBAPI is the part of the DynamoDB client the World uses.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// SQSAPI is the part of the SQS client the World and its Queue handler use.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// SchedulerAPI is the part of the EventBridge Scheduler client the World uses.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

// ConfigError reports an invalid [Config] field, naming the field and its value.
// It matches [worlds.ErrInvalidArgument].
type ConfigError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("awsworld: Config.%s %q: %s", e.Field, fmt.Sprint(e.Value), e.Reason)
}

// Is matches [worlds.ErrInvalidArgument].
func (e *ConfigError) Is(target error) bool { return target == worlds.ErrInvalidArgument }

// defaultQueue is the name of QueueURL in the resolved queue set.
const defaultQueue = ""

type queueRef struct {
	name string
	QueueConfig
}

func validate(c *Config) error {
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return &ConfigError{Field: "BaseURL", Value: c.BaseURL, Reason: "must be an absolute URL"}
		}
	}
	if c.TableName == "" {
		return &ConfigError{Field: "TableName", Value: c.TableName, Reason: "required"}
	}
	if c.QueueURL == "" {
		return &ConfigError{Field: "QueueURL", Value: c.QueueURL, Reason: "required"}
	}
	if strings.HasSuffix(c.QueueURL, ".fifo") {
		return &ConfigError{Field: "QueueURL", Value: c.QueueURL, Reason: "must be a standard queue; add FIFO queues to Queues"}
	}
	if s := c.Scheduler; s != nil {
		if s.Client == nil {
			return &ConfigError{Field: "Scheduler.Client", Value: "<nil>", Reason: "required"}
		}
		if s.TargetARN == "" {
			return &ConfigError{Field: "Scheduler.TargetARN", Value: s.TargetARN, Reason: "required: the ARN of the queue at QueueURL"}
		}
		if s.RoleARN == "" {
			return &ConfigError{Field: "Scheduler.RoleARN", Value: s.RoleARN, Reason: "required: the role Scheduler assumes to send to the queue"}
		}
	}
	for name, q := range c.Queues {
		field := fmt.Sprintf("Queues[%q]", name)
		if name == "" {
			return &ConfigError{Field: "Queues", Value: name, Reason: "queue name must not be empty"}
		}
		if q.URL == "" {
			return &ConfigError{Field: field + ".URL", Value: q.URL, Reason: "required"}
		}
		if q.FIFO != strings.HasSuffix(q.URL, ".fifo") {
			return &ConfigError{Field: field + ".FIFO", Value: q.FIFO, Reason: "must match the queue URL's .fifo suffix"}
		}
		if q.FIFO && c.Scheduler == nil {
			return &ConfigError{Field: field + ".FIFO", Value: q.FIFO, Reason: "a FIFO queue needs Scheduler for delayed deliveries"}
		}
		if q.ARN == "" && (q.FIFO || c.Scheduler != nil) {
			return &ConfigError{Field: field + ".ARN", Value: q.ARN, Reason: "required when Scheduler is set or the queue is FIFO"}
		}
	}
	if err := c.Routes.Err(); err != nil {
		return &ConfigError{Field: "Routes", Value: err.Error(), Reason: "invalid route table"}
	}
	for _, r := range c.Routes.Entries() {
		if _, ok := c.Queues[r.Queue]; !ok {
			return &ConfigError{Field: "Routes", Value: r.Workflow + " -> " + r.Queue, Reason: "queue not in Queues"}
		}
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Lease < 2*time.Second || c.Lease > 12*time.Hour {
		return &ConfigError{Field: "Lease", Value: c.Lease, Reason: "must be within [2s, 12h]"}
	}
	if c.ListShards == 0 {
		c.ListShards = DefaultListShards
	}
	if c.ListShards < 1 || c.ListShards > maxListShards {
		return &ConfigError{Field: "ListShards", Value: c.ListShards, Reason: fmt.Sprintf("must be within [1, %d]", maxListShards)}
	}
	if c.DeadLetterRetention == 0 {
		c.DeadLetterRetention = DefaultDeadLetterRetention
	}
	if c.DeadLetterRetention < 0 {
		return &ConfigError{Field: "DeadLetterRetention", Value: c.DeadLetterRetention, Reason: "must not be negative"}
	}
	if c.Retention < 0 {
		return &ConfigError{Field: "Retention", Value: c.Retention, Reason: "must not be negative"}
	}
	if c.Retention > MaxSQSDelay && c.Scheduler == nil {
		return &ConfigError{Field: "Retention", Value: c.Retention, Reason: "over 15 minutes requires Scheduler"}
	}
	if err := validateGrants(c); err != nil {
		return err
	}
	for wf, d := range c.Retentions {
		field := fmt.Sprintf("Retentions[%q]", wf)
		if d < 0 {
			return &ConfigError{Field: field, Value: d, Reason: "must not be negative"}
		}
		if d > MaxSQSDelay && c.Scheduler == nil {
			return &ConfigError{Field: field, Value: d, Reason: "over 15 minutes requires Scheduler"}
		}
	}
	return nil
}
