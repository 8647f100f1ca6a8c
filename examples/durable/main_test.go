package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestBinaryThroughRuntimeAPI builds this command, starts it the way Lambda
// does (AWS_LAMBDA_RUNTIME_API pointing at a local Runtime API), so the real
// lambda.Start loop serves durable invocation payloads, and drives one
// execution on AWS's local checkpoint server until it succeeds.
func TestBinaryThroughRuntimeAPI(t *testing.T) {
	endpoint := os.Getenv(durabletest.EndpointEnv)
	if endpoint == "" {
		t.Skipf("%s is unset: AWS's local checkpoint server is not running (scripts/test starts it)", durabletest.EndpointEnv)
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rt, err := durabletest.NewRuntimeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+rt.Addr(), "AWS_ENDPOINT_URL_LAMBDA="+endpoint,
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "COOLING_OFF=1s")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()

	var backend durabletest.Backend
	for _, b := range durabletest.Backends() {
		if b.Real {
			backend = b
		}
	}
	e := backend.New(t, json.RawMessage(`{"id":"o-7","lines":["a","b","c","d","e"]}`), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.Drive(ctx, rt, 10)
	if err != nil || out.Status != durable.StatusSucceeded {
		t.Fatalf("out %+v, err %v\nfunction log:\n%s", out, err, logs.String())
	}
	var r Receipt
	if err := json.Unmarshal([]byte(aws.ToString(out.Result)), &r); err != nil {
		t.Fatal(err)
	}
	if r.Charge != "ch-o-7" || len(r.Reserved) != 5 || r.Reserved[4] != "rsv-e" {
		t.Errorf("receipt %+v", r)
	}
	if e.Invocations() != 2 {
		t.Errorf("%d invocations, want 2 (before and after the wait)", e.Invocations())
	}
}
