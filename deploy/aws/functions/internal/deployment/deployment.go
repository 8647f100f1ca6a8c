// Package deployment opens the AWS World of a deploy/aws deployment inside its
// Lambda functions, from the environment the Terraform root sets (read by
// awsworld.ConfigFromEnv), with the function's AWS credentials.
package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Logger is the functions' logger: JSON at Info on stderr, which Lambda sends to
// the function's log group.
func Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stderr, nil)) }

// Open builds the World from getenv (os.Getenv) and the default AWS
// configuration. Set Routes here when you route workflows to queues of their own.
func Open(ctx context.Context, getenv func(string) string, logger *slog.Logger) (*awsworld.World, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	cfg, err := awsworld.ConfigFromEnv(getenv, scheduler.NewFromConfig(awsCfg))
	if err != nil {
		return nil, err
	}
	cfg.Logger = logger
	return awsworld.New(cfg, dynamodb.NewFromConfig(awsCfg), sqs.NewFromConfig(awsCfg))
}
