package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// awsClients are the AWS clients of every --aws command (inspect, ui, sweep,
// redrive), built by newAWSClients alone so that they all reach the same
// endpoints in the same region.
type awsClients struct {
	region    string
	dynamodb  *dynamodb.Client
	sqs       *sqs.Client
	scheduler *scheduler.Client
}

// newAWSClients loads the default AWS configuration (credentials, the
// profile, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>), in region when it
// is not empty, and builds the clients. DYNAMODB_ENDPOINT, SQS_ENDPOINT and
// SCHEDULER_ENDPOINT, read with getenv, override a service's endpoint (for
// DynamoDB Local and SQS emulators); an unset one leaves the configuration's
// endpoint in place rather than resetting it to AWS's.
func newAWSClients(ctx context.Context, getenv func(string) string, region string) (*awsClients, error) {
	var loadOpts []func(*config.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("AWS World: no region: pass --region, or set AWS_REGION (or a region in your AWS profile)")
	}
	override := func(name string, base **string) {
		if ep := getenv(name); ep != "" {
			*base = aws.String(ep)
		}
	}
	return &awsClients{
		region:    cfg.Region,
		dynamodb:  dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { override("DYNAMODB_ENDPOINT", &o.BaseEndpoint) }),
		sqs:       sqs.NewFromConfig(cfg, func(o *sqs.Options) { override("SQS_ENDPOINT", &o.BaseEndpoint) }),
		scheduler: scheduler.NewFromConfig(cfg, func(o *scheduler.Options) { override("SCHEDULER_ENDPOINT", &o.BaseEndpoint) }),
	}, nil
}
