package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/local"
)

// worldFlags choose the World a command reads: the embedded World file (--db,
// CAIRN_DB) or the AWS World (--aws, with the table and queue from flags or the
// environment the Terraform module outputs).
type worldFlags struct {
	db       string
	aws      bool
	table    string
	queueURL string
}

func (f *worldFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "embedded World file (default $CAIRN_DB)")
	fs.BoolVar(&f.aws, "aws", false, "read the AWS World (DynamoDB table + SQS queue)")
	fs.StringVar(&f.table, "table", "", "DynamoDB table of the AWS World (default $WORKFLOW_TABLE)")
	fs.StringVar(&f.queueURL, "queue-url", "", "SQS queue URL of the AWS World (default $WORKFLOW_QUEUE_URL)")
}

// open returns the World the flags name and a function to release it. getenv
// is os.Getenv outside tests.
func (f *worldFlags) open(ctx context.Context, getenv func(string) string) (worlds.World, func(), error) {
	if f.aws || f.table != "" {
		return f.openAWS(ctx, getenv)
	}
	path := f.db
	if path == "" {
		path = getenv("CAIRN_DB")
	}
	if path == "" {
		return nil, nil, errors.New("no World given: pass --db PATH (or set CAIRN_DB), or --aws")
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("no World file at %s", path)
		}
		return nil, nil, fmt.Errorf("cannot read World file %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("World file %s is a directory", path)
	}
	w, err := local.Open(ctx, local.Config{Path: path})
	if err != nil {
		if errors.Is(err, local.ErrSchemaVersion) {
			return nil, nil, fmt.Errorf("World file %s was written by another version of cairn: %w", path, err)
		}
		return nil, nil, fmt.Errorf("cannot open World file %s: %w", path, err)
	}
	return w, func() { _ = w.Close() }, nil
}

// queueEnv is one entry of WORKFLOW_QUEUES as the Terraform module writes it.
type queueEnv struct {
	URL  string `json:"url"`
	ARN  string `json:"arn"`
	FIFO bool   `json:"fifo"`
}

func (f *worldFlags) openAWS(ctx context.Context, getenv func(string) string) (worlds.World, func(), error) {
	table, queueURL := f.table, f.queueURL
	if table == "" {
		table = getenv("WORKFLOW_TABLE")
	}
	if queueURL == "" {
		queueURL = getenv("WORKFLOW_QUEUE_URL")
	}
	if table == "" {
		return nil, nil, errors.New("AWS World: no table: pass --table or set WORKFLOW_TABLE")
	}
	if queueURL == "" {
		return nil, nil, errors.New("AWS World: no queue: pass --queue-url or set WORKFLOW_QUEUE_URL")
	}
	// Reading needs no routes, but a malformed WORKFLOW_QUEUES is still reported, since
	// the workers reading the same environment would fail on it too. FIFO queues need
	// a Scheduler the CLI does not configure, and reads never publish, so they are left out.
	queues := map[string]awsworld.QueueConfig{}
	if raw := getenv("WORKFLOW_QUEUES"); raw != "" {
		var parsed map[string]queueEnv
		if err := json.Unmarshal([]byte(raw), &parsed); err != nil {
			return nil, nil, fmt.Errorf("WORKFLOW_QUEUES is not a JSON object of queues: %w", err)
		}
		for name, q := range parsed {
			if !q.FIFO {
				queues[name] = awsworld.QueueConfig{URL: q.URL, ARN: q.ARN}
			}
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("AWS configuration: %w", err)
	}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := getenv("DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if ep := getenv("SQS_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	base := getenv("WORKFLOW_BASE_URL")
	if base == "" {
		base = "http://localhost/v1/workflow" // only used for webhook URLs, which inspect never builds
	}
	w, err := awsworld.New(awsworld.Config{BaseURL: base, TableName: table, QueueURL: queueURL, Queues: queues}, ddb, sq)
	if err != nil {
		return nil, nil, fmt.Errorf("AWS World: %w", err)
	}
	return w, func() {}, nil
}
