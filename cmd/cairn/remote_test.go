package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/cairn-go/cairn/deploy/aws/flows"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

func TestFunctionURLRegion(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"abcdefg.lambda-url.eu-west-1.on.aws":     "eu-west-1",
		"abcdefg.lambda-url.us-east-2.on.aws:443": "us-east-2",
		"hooks.example.com":                       "",
		"127.0.0.1:8080":                          "",
		"lambda-url.eu-west-1.on.aws":             "",
	} {
		if got := functionURLRegion(host); got != want {
			t.Errorf("functionURLRegion(%q) = %q, want %q", host, got, want)
		}
	}
}

// requireSigV4 stands in for an AWS_IAM Function URL: it recomputes the SigV4
// signature for the lambda service from the request and answers 403 as Lambda
// does when it differs.
func requireSigV4(creds aws.Credentials, region string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		deny := func(msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"Message": msg})
		}
		auth := r.Header.Get("Authorization")
		ts, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if auth == "" || err != nil {
			deny("Forbidden")
			return
		}
		sum := sha256.Sum256(body)
		if r.Header.Get("X-Amz-Content-Sha256") != hex.EncodeToString(sum[:]) {
			deny("payload hash mismatch")
			return
		}
		clone, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
		_, signed, _ := strings.Cut(auth, "SignedHeaders=")
		signed, _, _ = strings.Cut(signed, ",")
		for _, h := range strings.Split(signed, ";") {
			if h != "host" {
				clone.Header.Set(h, r.Header.Get(h))
			}
		}
		if err := v4.NewSigner().SignHTTP(r.Context(), creds, clone, hex.EncodeToString(sum[:]), "lambda", region, ts); err != nil {
			deny(err.Error())
			return
		}
		if clone.Header.Get("Authorization") != auth {
			deny("The request signature we calculated does not match the signature you provided.")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// The README walk-through against a local stand-in of the deployment: an
// embedded World behind the same worldhttp handlers the api and webhook
// functions serve, with the RPC behind a SigV4 check, and the deploy/aws
// worker's workflows served from the same World. cairn runs start signs its
// request, cairn hooks resume posts to the hook's webhook URL, and cairn inspect
// shows the finished run.
func TestWalkThroughAgainstALocalStandIn(t *testing.T) {
	// The CLI reads credentials from the environment, as in the walk-through.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDWALKTHROUGH")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "walk-through-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	path := filepath.Join(t.TempDir(), "cairn.db")
	world, err := local.Open(ctx, local.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- client.Serve(serveCtx, workflow.Use(flows.Approval{})) }()
	defer func() { stop(); <-served }()

	creds := aws.Credentials{AccessKeyID: "AKIDWALKTHROUGH", SecretAccessKey: "walk-through-secret"}
	mux := http.NewServeMux()
	// Behind IAM, as on AWS, the RPC lists hook tokens (awsworld.RPC sets ShowTokens).
	mux.Handle("/v1/workflow/rpc", requireSigV4(creds, "eu-west-1", worldhttp.RPC(world, worldhttp.Options{ShowTokens: true})))
	mux.Handle("/v1/workflow/webhooks/", worldhttp.Webhook(world, worldhttp.Options{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	env := map[string]string{"CAIRN_URL": srv.URL + "/v1/workflow", "AWS_REGION": "eu-west-1"}
	getenv := func(k string) string { return env[k] }

	// 1. cairn runs start deploy.Approval --input ... (signed).
	var out bytes.Buffer
	if err := runsErr(ctx, []string{"start", "deploy.Approval", "--input", `{"subject":"release 1.2"}`, "--run-id", "walk-1"}, &out, getenv); err != nil {
		t.Fatalf("runs start: %v", err)
	}
	var run worlds.Run
	if err := json.Unmarshal(out.Bytes(), &run); err != nil || run.RunID != "walk-1" || run.WorkflowName != "deploy.Approval" {
		t.Fatalf("runs start printed %s (%v)", out.Bytes(), err)
	}

	// Retrying the start with the same run ID and input returns the same run.
	out.Reset()
	if err := runsErr(ctx, []string{"start", "deploy.Approval", "--input", `{"subject":"release 1.2"}`, "--run-id", "walk-1"}, &out, getenv); err != nil {
		t.Fatalf("runs start retried: %v", err)
	}
	var again worlds.Run
	if err := json.Unmarshal(out.Bytes(), &again); err != nil || again.RunID != "walk-1" {
		t.Fatalf("retried runs start printed %s (%v)", out.Bytes(), err)
	}

	// 2. The worker creates the hook; cairn hooks list finds it through the signed
	// RPC. Its URL is <webhook base>/webhooks/<token>.
	var token string
	for token == "" {
		out.Reset()
		if err := hooksErr(ctx, []string{"list", "--run", run.RunID, "--json"}, &out, getenv); err != nil {
			t.Fatalf("hooks list: %v", err)
		}
		var page worlds.Page[worlds.Hook]
		if err := json.Unmarshal(out.Bytes(), &page); err != nil {
			t.Fatalf("hooks list printed %s: %v", out.Bytes(), err)
		}
		if len(page.Items) > 0 {
			token = page.Items[0].Token
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the run never created its hook")
		case <-time.After(20 * time.Millisecond):
		}
	}
	out.Reset()
	if err := hooksErr(ctx, []string{"list", "--run", run.RunID}, &out, getenv); err != nil || !strings.Contains(out.String(), token) || !strings.Contains(out.String(), "active") {
		t.Fatalf("hooks list table (%v):\n%s", err, out.String())
	}

	// 3. cairn hooks resume <webhook URL> --payload ... (public, unsigned).
	out.Reset()
	if err := hooksErr(ctx, []string{"resume", srv.URL + "/v1/workflow/webhooks/" + token, "--payload", `{"approved":true,"by":"dana"}`}, &out, getenv); err != nil {
		t.Fatalf("hooks resume: %v", err)
	}

	// 4. The run completes; cairn inspect shows it.
	for {
		r, err := world.GetRun(ctx, run.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == worlds.RunCompleted {
			if string(r.Output) != `"release 1.2 approved by dana"` {
				t.Errorf("run output %s", r.Output)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run still %s", r.Status)
		case <-time.After(20 * time.Millisecond):
		}
	}
	out.Reset()
	if err := inspectWith(ctx, []string{"run", run.RunID, "--db", path}, &out, getenv, nil); err != nil {
		t.Fatalf("inspect: %v", err)
	}
	if !strings.Contains(out.String(), "completed") {
		t.Errorf("inspect run:\n%s", out.String())
	}

	// An unsigned request, or one signed with other credentials, is refused as
	// the Function URL would refuse it, and the CLI says why.
	out.Reset()
	err = runsErr(ctx, []string{"start", "deploy.Approval", "--no-sign"}, &out, getenv)
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), "lambda:InvokeFunctionUrl") {
		t.Errorf("unsigned start: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	err = runsErr(ctx, []string{"start", "deploy.Approval"}, &out, getenv)
	if err == nil || !strings.Contains(err.Error(), "signature we calculated does not match") {
		t.Errorf("start signed with other credentials: %v", err)
	}
}

// A bare token resumes through the signed RPC's hooks.resume.
func TestHooksResumeByTokenCallsTheRPC(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTOKEN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "token-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	var got map[string]any
	rpc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = io.WriteString(w, `{"result":{"runId":"r1","hookId":"h1"}}`)
	})
	srv := httptest.NewServer(requireSigV4(aws.Credentials{AccessKeyID: "AKIDTOKEN", SecretAccessKey: "token-secret"}, "us-east-2", rpc))
	defer srv.Close()
	var out bytes.Buffer
	err := hooksErr(context.Background(), []string{"resume", "tok-123", "--payload", `{"ok":true}`, "--url", srv.URL + "/v1/workflow", "--region", "us-east-2"}, &out, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	params, _ := got["params"].(map[string]any)
	if got["method"] != "hooks.resume" || params["token"] != "tok-123" || !strings.Contains(out.String(), `"runId": "r1"`) {
		t.Errorf("sent %v, printed %s", got, out.String())
	}
}

func TestRemoteUsageErrors(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	for _, args := range [][]string{
		{"start"},                       // no workflow
		{"start", "w", "--input", "{x"}, // not JSON
		{"start", "w", "--url", "ftp://x"},
		{"stop", "w"},
		{"start", "w"}, // no URL
	} {
		if err := runsErr(context.Background(), args, io.Discard, none); err == nil {
			t.Errorf("runs %v: no error", args)
		} else if _, ok := err.(*usageError); !ok {
			t.Errorf("runs %v: %v is not a usage error", args, err)
		}
	}
	for _, args := range [][]string{{"resume"}, {"resume", "https://hooks.example.com/nothing"}, {"resume", "tok", "--payload", "nope"}} {
		if err := hooksErr(context.Background(), args, io.Discard, none); err == nil {
			t.Errorf("hooks %v: no error", args)
		}
	}
}
