package workflow_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/aws/schedulertest"
)

// The runtime tests also run on the AWS World, against DynamoDB Local and the
// SQS emulator (skipped when DYNAMODB_ENDPOINT or SQS_ENDPOINT is unset), with
// the Scheduler fake for long timers and World.Serve delivering in-process.
func init() {
	testWorlds = append(testWorlds, struct {
		name string
		open func(*testing.T) worlds.World
	}{"aws", openAWSWorld})
}

func openAWSWorld(t *testing.T) worlds.World {
	t.Helper()
	// Clients of their own whose idle connections close with the test, for goleak.
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	db := dynamodb.New(testenv.DynamoDB(t).Options(), func(o *dynamodb.Options) { o.HTTPClient = hc })
	sq := sqs.New(testenv.SQS(t).Options(), func(o *sqs.Options) { o.HTTPClient = hc })
	table := testenv.UniqueName(t, "wf")
	if err := awsworld.CreateTable(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	url, arn := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "q"), false)
	sched := schedulertest.New(sq, time.Now, func(a string) (string, error) {
		if a == arn {
			return url, nil
		}
		return "", fmt.Errorf("unknown target %s", a)
	})
	t.Cleanup(sched.Close)
	w, err := awsworld.New(awsworld.Config{
		BaseURL: "https://workflows.example.com/v1/workflow", TableName: table, QueueURL: url,
		Scheduler: &awsworld.SchedulerConfig{Client: scheduler.New(sched.Client(testenv.AWSConfig(t)).Options(), func(o *scheduler.Options) { o.HTTPClient = hc }), TargetARN: arn, RoleARN: "arn:aws:iam::000000000000:role/scheduler"},
	}, db, sq)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// HookURL returns its hook's webhook URL, or "none".
type HookURL struct{}

func (HookURL) Run(ctx workflow.Context, _ int) (string, error) {
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: "tok-url"})
	if err != nil {
		return "", err
	}
	if u, ok := h.URL(); ok {
		return u, nil
	}
	return "none", nil
}

// Hook.URL is the World's webhook URL for the token where the World knows its
// base URL (the AWS World above), and reports false elsewhere.
func TestHookURL(t *testing.T) {
	t.Parallel()
	want := map[string]string{"mem": "none", "local": "none", "aws": "https://workflows.example.com/v1/workflow/webhooks/tok-url"}
	for _, w := range testWorlds {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			h := serve(t, w.open(t), workflow.Config{}, workflow.Use(HookURL{}))
			run, err := workflow.Start(context.Background(), h.c, HookURL{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(resultCtx(t))
			if err != nil || got != want[w.name] {
				t.Fatalf("URL = %q, %v; want %q", got, err, want[w.name])
			}
		})
	}
}
