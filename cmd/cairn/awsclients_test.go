package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// newAWSClients sets a service's endpoint from DYNAMODB_ENDPOINT, SQS_ENDPOINT
// or SCHEDULER_ENDPOINT and otherwise keeps the configuration's, and takes the
// region from the flag first.
func TestAWSClientsEndpointsAndRegion(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://ddb.from-config.test")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	t.Setenv("AWS_ENDPOINT_URL_SCHEDULER", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	for _, tc := range []struct {
		name                        string
		env                         map[string]string
		region                      string
		wantRegion                  string
		wantDDB, wantSQS, wantSched string
	}{
		{name: "configuration's endpoint kept", wantRegion: "us-east-1", wantDDB: "http://ddb.from-config.test"},
		{name: "overrides", env: map[string]string{"DYNAMODB_ENDPOINT": "http://127.0.0.1:8000", "SQS_ENDPOINT": "http://127.0.0.1:4566", "SCHEDULER_ENDPOINT": "http://127.0.0.1:9"},
			region: "eu-west-3", wantRegion: "eu-west-3", wantDDB: "http://127.0.0.1:8000", wantSQS: "http://127.0.0.1:4566", wantSched: "http://127.0.0.1:9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newAWSClients(context.Background(), func(k string) string { return tc.env[k] }, tc.region)
			if err != nil {
				t.Fatal(err)
			}
			if c.region != tc.wantRegion {
				t.Errorf("region %q, want %q", c.region, tc.wantRegion)
			}
			for _, ep := range []struct {
				service   string
				got, want *string
			}{
				{"dynamodb", c.dynamodb.Options().BaseEndpoint, &tc.wantDDB},
				{"sqs", c.sqs.Options().BaseEndpoint, &tc.wantSQS},
				{"scheduler", c.scheduler.Options().BaseEndpoint, &tc.wantSched},
			} {
				if aws.ToString(ep.got) != *ep.want {
					t.Errorf("%s endpoint %q, want %q", ep.service, aws.ToString(ep.got), *ep.want)
				}
			}
		})
	}
}

// Every --aws command reaches the World through the SDK's own endpoint
// settings (AWS_ENDPOINT_URL_<SERVICE>) as well as through DYNAMODB_ENDPOINT
// and SQS_ENDPOINT: cairn sweep once dialled dynamodb.<region>.amazonaws.com
// where cairn inspect reached DynamoDB Local.
func TestEveryAWSCommandHonoursTheEndpointSettings(t *testing.T) {
	ddbEndpoint, sqsEndpoint := os.Getenv(testenv.EnvDynamoDB), os.Getenv(testenv.EnvSQS)
	ctx := context.Background()
	ddb, sqsc := testenv.DynamoDB(t), testenv.SQS(t)
	table := testenv.UniqueName(t, "clients")
	if err := awsworld.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, ddb, table)
	queueURL, _ := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "clients"), false)
	dlqURL, _ := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "clients-dlq"), false)
	w, err := awsworld.New(awsworld.Config{TableName: table, QueueURL: queueURL}, ddb, sqsc)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, "run-clients", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "deploy.Approval"})

	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddbEndpoint)
	t.Setenv("AWS_ENDPOINT_URL_SQS", sqsEndpoint)
	env := map[string]string{"WORKFLOW_TABLE": table, "WORKFLOW_QUEUE_URL": queueURL,
		"DYNAMODB_ENDPOINT": "", "SQS_ENDPOINT": "", "SCHEDULER_ENDPOINT": ""}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	for _, tc := range []struct {
		name string
		run  func(out *bytes.Buffer) error
		want string
	}{
		{"inspect run", func(out *bytes.Buffer) error {
			return inspectErr(ctx, []string{"run", "run-clients", "--aws"}, out, &bytes.Buffer{}, getenv)
		}, "pending"},
		{"inspect runs", func(out *bytes.Buffer) error {
			return inspectErr(ctx, []string{"runs", "--aws"}, out, &bytes.Buffer{}, getenv)
		}, ""},
		{"sweep", func(out *bytes.Buffer) error { return sweepErr(ctx, []string{"--aws", "--dry-run"}, out, getenv) }, "would send again"},
		{"redrive", func(out *bytes.Buffer) error {
			return redriveErr(ctx, []string{"--aws", "--dlq", dlqURL}, out, getenv)
		}, "moved 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := tc.run(&out); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("%s printed %q, want %q in it", tc.name, out.String(), tc.want)
			}
		})
	}
}
