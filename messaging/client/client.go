// Package client builds the AWS SDK clients the messaging packages take, SQS
// for the consumer and broker, SNS for the producer and EventBridge Scheduler
// for Scheduled Retry, from an aws.Config, and checks at construction that the
// service answers, so that a wrong endpoint, region or credential fails at
// start-up rather than at the first message. Its constructors and options
// have the names and signatures of loafer-awsx's client package.
//
// The check is one read-only call (ListQueues, ListTopics or ListSchedules,
// at most one result) with the SDK's own retries off, repeated up to the
// retry limit (default 2) within the ping timeout (default 3 s). It needs the
// matching List permission; WithoutConnectivityCheck skips it.
package client

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/producer"
)

// Defaults of the connectivity check.
const (
	DefaultPingTimeout    = 3 * time.Second
	DefaultPingRetryLimit = uint(2)
)

// Option configures a constructor of this package. An Option that returns an
// error aborts the construction with an error matching
// errors.ErrInvalidOption.
type Option func(*options) error

type options struct {
	pingTimeout       time.Duration
	pingRetryLimit    uint
	connectivityCheck bool
}

// pingConfig is the budget of one connectivity check.
type pingConfig struct {
	timeout    time.Duration
	retryLimit uint
}

func (o *options) pingConfig() pingConfig {
	return pingConfig{timeout: o.pingTimeout, retryLimit: o.pingRetryLimit}
}

// WithPingTimeout sets the time the connectivity check may take, all attempts
// included. It must be positive.
func WithPingTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("client: WithPingTimeout(%s): the timeout must be positive", d)
		}
		o.pingTimeout = d
		return nil
	}
}

// WithPingRetryLimit sets how many times the connectivity check is tried
// again after a failed first attempt; 0: once only.
func WithPingRetryLimit(n uint) Option {
	return func(o *options) error {
		o.pingRetryLimit = n
		return nil
	}
}

// WithoutConnectivityCheck builds the client without calling the service:
// for credentials without the List permission, or to build it offline.
func WithoutConnectivityCheck() Option {
	return func(o *options) error {
		o.connectivityCheck = false
		return nil
	}
}

// buildOptions applies opts in order over the defaults; nil options are
// skipped.
func buildOptions(opts ...Option) (*options, error) {
	o := &options{pingTimeout: DefaultPingTimeout, pingRetryLimit: DefaultPingRetryLimit, connectivityCheck: true}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, merrors.Wrap(merrors.ErrInvalidOption, err)
		}
	}
	return o, nil
}

// validate runs ping, whose SDK retries are off, until it succeeds, at most cfg.retryLimit+1 times and
// within cfg.timeout. Cancelling ctx stops further attempts, but an attempt
// under way completes (bounded by the timeout), so its answer is not lost to
// a cancellation that races it. The error matches ErrPingFailed and wraps
// the last cause.
func validate(ctx context.Context, cfg pingConfig, ping func(context.Context) error) error {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.timeout)
	defer cancel()
	var last error
	for range cfg.retryLimit + 1 {
		if err := ctx.Err(); err != nil {
			return merrors.Wrap(merrors.ErrPingFailed, err)
		}
		if last = ping(bctx); last == nil {
			return nil
		}
		if bctx.Err() != nil {
			break
		}
	}
	return merrors.Wrap(merrors.ErrPingFailed, last)
}

// construct returns api once opts are valid and, unless disabled, ping
// succeeded.
func construct[C any](ctx context.Context, api C, ping func(context.Context) error, opts []Option) (C, error) {
	var zero C
	o, err := buildOptions(opts...)
	if err != nil {
		return zero, err
	}
	if o.connectivityCheck {
		if err := validate(ctx, o.pingConfig(), ping); err != nil {
			return zero, err
		}
	}
	return api, nil
}

// sqsAPI is what NewSQS returns and checks with.
type sqsAPI interface {
	consumer.SQSClient
	ListQueues(ctx context.Context, in *sqs.ListQueuesInput, opts ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
}

// snsAPI is what NewSNS returns and checks with.
type snsAPI interface {
	producer.SNSClient
	ListTopics(ctx context.Context, in *sns.ListTopicsInput, opts ...func(*sns.Options)) (*sns.ListTopicsOutput, error)
}

// schedulerAPI is what NewScheduler returns and checks with.
type schedulerAPI interface {
	consumer.SchedulerClient
	ListSchedules(ctx context.Context, in *scheduler.ListSchedulesInput, opts ...func(*scheduler.Options)) (*scheduler.ListSchedulesOutput, error)
}

// NewSQS returns the SQS client of cfg for consumer.New and broker.New, after
// checking that SQS answers (ListQueues). The error matches
// errors.ErrInvalidOption for a bad option and errors.ErrPingFailed when the
// check fails. The client returned is an *sqs.Client, with batched
// acknowledgement.
func NewSQS(ctx context.Context, cfg aws.Config, opts ...Option) (consumer.SQSClient, error) {
	return newSQS(ctx, sqs.NewFromConfig(cfg), opts...)
}

func newSQS(ctx context.Context, api sqsAPI, opts ...Option) (consumer.SQSClient, error) {
	return construct[consumer.SQSClient](ctx, api, func(ctx context.Context) error {
		_, err := api.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)}, func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
		return err
	}, opts)
}

// NewSNS returns the SNS client of cfg for producer.New, after checking that
// SNS answers (ListTopics). Errors as for NewSQS.
func NewSNS(ctx context.Context, cfg aws.Config, opts ...Option) (producer.SNSClient, error) {
	return newSNS(ctx, sns.NewFromConfig(cfg), opts...)
}

func newSNS(ctx context.Context, api snsAPI, opts ...Option) (producer.SNSClient, error) {
	return construct[producer.SNSClient](ctx, api, func(ctx context.Context) error {
		_, err := api.ListTopics(ctx, &sns.ListTopicsInput{}, func(o *sns.Options) { o.Retryer = aws.NopRetryer{} })
		return err
	}, opts)
}

// NewScheduler returns the EventBridge Scheduler client of cfg for a route's
// Scheduled Retry, after checking that Scheduler answers (ListSchedules).
// Errors as for NewSQS.
func NewScheduler(ctx context.Context, cfg aws.Config, opts ...Option) (consumer.SchedulerClient, error) {
	return newScheduler(ctx, scheduler.NewFromConfig(cfg), opts...)
}

func newScheduler(ctx context.Context, api schedulerAPI, opts ...Option) (consumer.SchedulerClient, error) {
	return construct[consumer.SchedulerClient](ctx, api, func(ctx context.Context) error {
		_, err := api.ListSchedules(ctx, &scheduler.ListSchedulesInput{MaxResults: aws.Int32(1)}, func(o *scheduler.Options) { o.Retryer = aws.NopRetryer{} })
		return err
	}, opts)
}
