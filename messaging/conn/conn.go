// Package conn builds the aws.Config shared by the SQS, SNS and Scheduler
// clients: region, static credentials or profile, custom endpoint, retries.
package conn

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	merrors "github.com/cairn-go/cairn/messaging/errors"
)

// DefaultRetryCount is the default maximum number of attempts.
const DefaultRetryCount uint = 10

type settings struct {
	region, key, secret, token, profile, endpoint string
	retries                                       uint
}

// Option configures New.
type Option func(*settings)

// WithRegion sets the AWS region (required).
func WithRegion(region string) Option { return func(s *settings) { s.region = region } }

// WithAccessKey sets static credentials; they take precedence over a profile.
func WithAccessKey(key, secret string) Option {
	return func(s *settings) { s.key, s.secret = key, secret }
}

// WithSessionToken sets a session token, used only with static credentials.
func WithSessionToken(token string) Option { return func(s *settings) { s.token = token } }

// WithProfile selects a shared config profile.
func WithProfile(profile string) Option { return func(s *settings) { s.profile = profile } }

// WithEndpoint sets a custom endpoint URL (an emulator, for example).
func WithEndpoint(url string) Option { return func(s *settings) { s.endpoint = url } }

// WithRetryCount sets the maximum attempts (default 10).
func WithRetryCount(n uint) Option { return func(s *settings) { s.retries = n } }

// New loads an aws.Config. It returns ErrEmptyRegion without a region.
// Nothing is contacted: credentials resolve lazily on first use.
func New(ctx context.Context, opts ...Option) (aws.Config, error) {
	s := settings{retries: DefaultRetryCount}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if strings.TrimSpace(s.region) == "" {
		return aws.Config{}, merrors.ErrEmptyRegion
	}
	if (s.key == "") != (s.secret == "") {
		return aws.Config{}, merrors.Wrap(merrors.ErrInvalidOption, errString("WithAccessKey: key and secret must both be set"))
	}
	loaders := []func(*config.LoadOptions) error{
		config.WithRegion(s.region),
		config.WithRetryer(func() aws.Retryer {
			return retry.AddWithMaxAttempts(retry.NewStandard(), int(max(s.retries, 1)))
		}),
	}
	if s.key != "" {
		loaders = append(loaders, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(s.key, s.secret, s.token)))
	} else if s.profile != "" {
		loaders = append(loaders, config.WithSharedConfigProfile(s.profile))
	}
	if s.endpoint != "" {
		loaders = append(loaders, config.WithBaseEndpoint(s.endpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return aws.Config{}, err
	}
	return cfg, nil
}

type errString string

func (e errString) Error() string { return string(e) }
