package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/local"
)

// worldFlags choose the World a command uses: the embedded World file (--db,
// CAIRN_DB) or the AWS World (--aws, with the table and queue from flags or the
// environment the Terraform module outputs).
type worldFlags struct {
	db       string
	aws      bool
	table    string
	queueURL string
	region   string
	// readOnly commands never queue a delivery, so they need no queue URL.
	readOnly bool
}

// register adds the flags of a command that writes to the World: the AWS World
// needs its queue, to wake runs.
func (f *worldFlags) register(fs *flag.FlagSet) {
	f.registerReadOnly(fs)
	f.readOnly = false
	fs.StringVar(&f.queueURL, "queue-url", "", "SQS queue URL of the AWS World (default $WORKFLOW_QUEUE_URL)")
}

// registerReadOnly adds the flags of a command that only reads the World.
func (f *worldFlags) registerReadOnly(fs *flag.FlagSet) {
	f.readOnly = true
	fs.StringVar(&f.db, "db", "", "embedded World file (default $CAIRN_DB)")
	fs.BoolVar(&f.aws, "aws", false, "use the AWS World (DynamoDB table, SQS queue)")
	fs.StringVar(&f.table, "table", "", "DynamoDB table of the AWS World (default $WORKFLOW_TABLE)")
	fs.StringVar(&f.region, "region", "", "AWS region (default $AWS_REGION or the profile's region)")
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
		if !f.readOnly {
			return nil, nil, errors.New("AWS World: no queue: pass --queue-url or set WORKFLOW_QUEUE_URL")
		}
		// Reads never queue a delivery; the World requires a URL all the same.
		queueURL = "https://sqs.invalid/000000000000/unused-by-reads"
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
	clients, err := newAWSClients(ctx, getenv, f.region)
	if err != nil {
		return nil, nil, err
	}
	// BaseURL is optional: without it hooks show no webhook URL rather than a made-up one.
	w, err := awsworld.New(awsworld.Config{BaseURL: getenv("WORKFLOW_BASE_URL"), TableName: table, QueueURL: queueURL, Queues: queues}, clients.dynamodb, clients.sqs)
	if err != nil {
		return nil, nil, fmt.Errorf("AWS World: %w", err)
	}
	return &friendlyWorld{World: w, table: table, region: clients.region}, func() {}, nil
}

// friendlyWorld turns the DynamoDB errors a user can fix into messages naming
// the fix; everything else passes through.
type friendlyWorld struct {
	worlds.World
	table, region string
}

func (w *friendlyWorld) explain(err error) error {
	var notFound *ddbtypes.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return fmt.Errorf("DynamoDB table %q not found in region %s: check --table (or WORKFLOW_TABLE) and --region (or AWS_REGION); create it with the Terraform module or awsworld.CreateTable: %w",
			w.table, w.region, err)
	}
	return err
}

func (w *friendlyWorld) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	r, err := w.World.GetRun(ctx, runID)
	return r, w.explain(err)
}

func (w *friendlyWorld) ListRuns(ctx context.Context, f worlds.RunFilter) (worlds.Page[worlds.Run], error) {
	p, err := w.World.ListRuns(ctx, f)
	return p, w.explain(err)
}

func (w *friendlyWorld) ListHooks(ctx context.Context, f worlds.HookFilter) (worlds.Page[worlds.Hook], error) {
	p, err := w.World.ListHooks(ctx, f)
	return p, w.explain(err)
}

func (w *friendlyWorld) GetHookByToken(ctx context.Context, token string) (worlds.Hook, error) {
	h, err := w.World.GetHookByToken(ctx, token)
	return h, w.explain(err)
}

func (w *friendlyWorld) Append(ctx context.Context, runID string, evs ...worlds.Event) ([]worlds.Event, error) {
	out, err := w.World.Append(ctx, runID, evs...)
	return out, w.explain(err)
}
