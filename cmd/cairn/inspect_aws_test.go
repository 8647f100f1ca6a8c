package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// TestInspectAWSWorld reads an AWS World on DynamoDB Local and the SQS emulator,
// found the way a deployed CLI finds it: WORKFLOW_TABLE and WORKFLOW_QUEUE_URL.
func TestInspectAWSWorld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb, sqsc := testenv.DynamoDB(t), testenv.SQS(t)
	table := testenv.UniqueName(t, "inspect")
	if err := awsworld.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, ddb, table)
	queueURL, _ := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "inspect"), false)
	w, err := awsworld.New(awsworld.Config{BaseURL: "http://localhost/v1/workflow", TableName: table, QueueURL: queueURL}, ddb, sqsc)
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, "run-aws", seedOK...)
	appendAll(t, w, "run-aws", worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`{"tracking":"1Z"}`)})

	env := map[string]string{"WORKFLOW_TABLE": table, "WORKFLOW_QUEUE_URL": queueURL,
		"WORKFLOW_QUEUES": `{"heavy":{"url":"` + queueURL + `","arn":"arn:aws:sqs:us-east-1:000000000000:heavy","fifo":false}}`}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	inspectAWS := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := inspectErr(ctx, append(args, "--aws"), &out, &errb, getenv); err != nil {
			t.Fatalf("inspect %v: %v", args, err)
		}
		return out.String()
	}
	if out := inspectAWS("run", "run-aws"); !strings.Contains(out, "completed") || !strings.Contains(out, "orders.Fulfil") {
		t.Fatalf("run:\n%s", out)
	}
	if out := inspectAWS("steps", "run-aws"); !strings.Contains(out, "charge card") {
		t.Fatalf("steps:\n%s", out)
	}
	if out := inspectAWS("events", "run-aws"); !strings.Contains(out, "step_retrying") {
		t.Fatalf("events:\n%s", out)
	}
	// Listings read an eventually consistent index: poll briefly.
	deadline := time.Now().Add(10 * time.Second)
	for out := ""; !strings.Contains(out, "run-aws"); out = inspectAWS("runs", "--workflow", "orders.Fulfil") {
		if time.Now().After(deadline) {
			t.Fatalf("runs never listed run-aws:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var out, errb bytes.Buffer
	err = inspectErr(ctx, []string{"run", "nope", "--aws"}, &out, &errb, getenv)
	if err == nil || !strings.Contains(err.Error(), `run "nope" not found`) {
		t.Fatalf("unknown run on AWS: %v", err)
	}
	// A table that does not exist is named, with the fix, for every subject.
	for _, args := range [][]string{{"runs"}, {"run", "run-aws"}, {"hooks"}} {
		err = inspectErr(ctx, append(args, "--aws", "--table", table+"-missing"), &out, &errb, getenv)
		if err == nil || !strings.Contains(err.Error(), `DynamoDB table "`+table+`-missing" not found in region`) {
			t.Fatalf("inspect %v on a missing table: %v", args, err)
		}
	}
}

// Without a region the AWS World is refused with the fix, before any request.
func TestInspectAWSWithoutRegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	var out, errb bytes.Buffer
	err := inspectErr(context.Background(), []string{"runs", "--aws", "--table", "t"}, &out, &errb, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "no region") || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("no region: %v", err)
	}
}

// TestInspectUnreachableWorld points the AWS World at a closed port: the command
// fails with one line, not a hang or a trace.
func TestInspectUnreachableWorld(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	// Reading needs no queue URL.
	env := map[string]string{"WORKFLOW_TABLE": "t", "DYNAMODB_ENDPOINT": "http://127.0.0.1:1"}
	var out, errb bytes.Buffer
	err := inspectErr(context.Background(), []string{"runs", "--aws"}, &out, &errb, func(k string) string { return env[k] })
	if err == nil {
		t.Fatal("listing an unreachable World succeeded")
	}
	var msg bytes.Buffer
	if code := reportInspectError(&msg, err); code != 1 || strings.Count(msg.String(), "\n") != 1 || !strings.Contains(msg.String(), "127.0.0.1:1") {
		t.Fatalf("exit %d, message %q", code, msg.String())
	}
	env["WORKFLOW_QUEUES"] = "{not json"
	err = inspectErr(context.Background(), []string{"runs", "--aws"}, &out, &errb, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "WORKFLOW_QUEUES") {
		t.Fatalf("malformed WORKFLOW_QUEUES: %v", err)
	}
}
