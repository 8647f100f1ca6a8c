package rietest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// EnvRIE names the aws-lambda-rie executable; ./scripts/test sets it.
const EnvRIE = "CAIRN_RIE"

// invokePath is the RIE's endpoint for invoking the function it runs.
const invokePath = "/2015-03-31/functions/function/invocations"

// webhookBase stands for the webhook function's URL (WORKFLOW_BASE_URL), as a
// custom domain in front of it would be; the test routes its paths to the
// webhook function's emulator.
const webhookBase = "https://hooks.example.test/v1/workflow"

func rieBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv(EnvRIE)
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset but CI=true: run ./scripts/test, which installs aws-lambda-rie", EnvRIE)
		}
		t.Skipf("SKIPPED: %s is unset, so the deploy/aws functions were not run under the Lambda Runtime Interface Emulator; run ./scripts/test ./deploy/aws/rietest/...", EnvRIE)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", EnvRIE, p, err)
	}
	return p
}

// buildFunctions runs scripts/lambda as `make lambda` does, for the host's
// architecture, and unpacks each archive's bootstrap into a directory of its own.
func buildFunctions(t *testing.T, names ...string) map[string]string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "lambda"), names...)
	cmd.Env = append(os.Environ(), "LAMBDA_OUT="+out, "LAMBDA_ARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/lambda: %v\n%s", err, b)
	}
	dirs := map[string]string{}
	for _, name := range names {
		zr, err := zip.OpenReader(filepath.Join(out, name+".zip"))
		if err != nil {
			t.Fatalf("%s.zip: %v", name, err)
		}
		if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" {
			t.Fatalf("%s.zip holds %d files (first %q), want one named bootstrap", name, len(zr.File), zr.File[0].Name)
		}
		dir := filepath.Join(out, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src, err := zr.File[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.OpenFile(filepath.Join(dir, "bootstrap"), os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
		zr.Close()
		dirs[name] = dir
	}
	return dirs
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// function is one deploy/aws function running under its own emulator.
type function struct {
	name string
	addr string
	out  *syncBuffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs the bootstrap in dir under the RIE on loopback ports of its own,
// with env as the function's variables, and stops the emulator (and the
// bootstrap it started, in its process group) when the test ends.
func start(t *testing.T, rie, name, dir string, env map[string]string) *function {
	t.Helper()
	f := &function{name: name, addr: freeAddr(t), out: &syncBuffer{}}
	cmd := exec.Command(rie, "--log-level", "error",
		"--runtime-interface-emulator-address", f.addr,
		"--runtime-api-address", freeAddr(t),
		filepath.Join(dir, "bootstrap"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f.out, f.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start aws-lambda-rie for %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, f.out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", f.addr, time.Second)
		if err == nil {
			c.Close()
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("aws-lambda-rie for %s does not listen on %s: %v\n%s", name, f.addr, err, f.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// invoke sends payload to the function as Lambda's Invoke API does and returns
// the function's response payload. A function error fails the test.
func (f *function) invoke(t *testing.T, payload any) []byte {
	t.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+f.addr+invokePath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke %s: %v", f.name, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("invoke %s: reading the response: %v", f.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke %s: HTTP %d: %s", f.name, resp.StatusCode, out)
	}
	var fnErr struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal(out, &fnErr) == nil && fnErr.ErrorType != "" {
		t.Fatalf("invoke %s: function error %s: %s", f.name, fnErr.ErrorType, fnErr.ErrorMessage)
	}
	return out
}

// url sends an HTTP request to the function as its Function URL does (payload
// format 2.0) and decodes the streamed response (RESPONSE_STREAM): a JSON
// prelude with the status and headers, eight NUL bytes, then the body.
func (f *function) url(t *testing.T, method, rawURL, contentType, body string) (int, []byte) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ev := events.LambdaFunctionURLRequest{
		Version:        "2.0",
		RawPath:        u.EscapedPath(),
		RawQueryString: u.RawQuery,
		Headers: map[string]string{
			"content-type": contentType, "host": u.Host, "user-agent": "rietest",
			"content-length": strconv.Itoa(len(body)), "x-forwarded-proto": "https",
		},
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: "123456789012", RequestID: fmt.Sprintf("req-%d", now.UnixNano()),
			APIID: strings.SplitN(u.Host, ".", 2)[0], DomainName: u.Host, DomainPrefix: strings.SplitN(u.Host, ".", 2)[0],
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: method, Path: u.Path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "rietest",
			},
		},
		Body: body,
	}
	out := f.invoke(t, ev)
	prelude, rest, ok := bytes.Cut(out, make([]byte, 8))
	if !ok {
		t.Fatalf("%s %s: the response is not a streamed Function URL response (no prelude): %q", method, rawURL, out)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil || p.StatusCode == 0 {
		t.Fatalf("%s %s: bad response prelude %q: %v", method, rawURL, prelude, err)
	}
	return p.StatusCode, rest
}

// rpcError is the error body of the RPC endpoint.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// rpc calls method on the api function's Function URL and decodes its result
// into result (when the call succeeds).
func rpc(t *testing.T, api *function, method string, params any, result any) (int, *rpcError) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	status, out := api.url(t, http.MethodPost, "https://abcdefghij.lambda-url.us-east-1.on.aws/v1/workflow/rpc", "application/json", string(body))
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(out, &env); err != nil {
		t.Fatalf("%s: the body is not JSON: %q", method, out)
	}
	if env.Error == nil && result != nil {
		if err := json.Unmarshal(env.Result, result); err != nil {
			t.Fatalf("%s: result %s: %v", method, env.Result, err)
		}
	}
	return status, env.Error
}

// eventSource plays the SQS event source mapping of the worker: it receives
// the messages on the task queue, invokes the worker with them as one batch,
// and deletes those not reported in batchItemFailures.
type eventSource struct {
	sqs      *sqs.Client
	queueURL string
	queueARN string
	region   string
	worker   *function
	deleted  map[string]bool // message IDs deleted after a successful invocation
}

// batch is one invocation: the records sent and the ones the worker failed.
type batch struct {
	records []events.SQSMessage
	failed  map[string]bool
}

func (es *eventSource) poll(t *testing.T) batch {
	t.Helper()
	ctx := context.Background()
	got, err := es.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(es.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatalf("receive from the task queue: %v", err)
	}
	b := batch{failed: map[string]bool{}}
	if len(got.Messages) == 0 {
		return b
	}
	for _, m := range got.Messages {
		id := aws.ToString(m.MessageId)
		if es.deleted[id] {
			t.Errorf("message %s was received again after the worker succeeded on it and it was deleted", id)
		}
		r := events.SQSMessage{
			MessageId: id, ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes,
			EventSource: "aws:sqs", EventSourceARN: es.queueARN, AWSRegion: es.region,
			MessageAttributes: map[string]events.SQSMessageAttribute{},
		}
		if r.Attributes == nil {
			r.Attributes = map[string]string{}
		}
		for k, v := range m.MessageAttributes {
			r.MessageAttributes[k] = events.SQSMessageAttribute{
				StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType),
				StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues,
			}
		}
		r.Md5OfMessageAttributes = aws.ToString(m.MD5OfMessageAttributes)
		b.records = append(b.records, r)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(es.worker.invoke(t, events.SQSEvent{Records: b.records}), &resp); err != nil {
		t.Fatalf("worker response: %v", err)
	}
	sent := map[string]bool{}
	for _, r := range b.records {
		sent[r.MessageId] = true
	}
	for _, f := range resp.BatchItemFailures {
		if !sent[f.ItemIdentifier] {
			t.Errorf("batchItemFailures names %q, which is not in the batch", f.ItemIdentifier)
		}
		b.failed[f.ItemIdentifier] = true
	}
	for _, r := range b.records {
		if b.failed[r.MessageId] {
			continue // left on the queue: SQS delivers it again once visible
		}
		if _, err := es.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(es.queueURL), ReceiptHandle: aws.String(r.ReceiptHandle)}); err != nil {
			t.Fatalf("delete message %s: %v", r.MessageId, err)
		}
		es.deleted[r.MessageId] = true
	}
	return b
}

// The deploy/aws approval walk-through, with every function built as
// `make lambda` builds it and run under the Lambda Runtime Interface Emulator.
func TestApprovalWalkThroughUnderTheRuntimeInterfaceEmulator(t *testing.T) {
	rie := rieBinary(t)
	ddb, sqsc := testenv.DynamoDB(t), testenv.SQS(t)
	ctx := context.Background()
	table := testenv.UniqueName(t, "rie")
	if err := awsworld.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, ddb, table)
	queueURL, queueARN := testenv.CreateQueue(t, sqsc, testenv.UniqueName(t, "rie-tasks"), false)

	dirs := buildFunctions(t, "api", "webhook", "worker", "sweeper")
	region := testenv.AWSConfig(t).Region
	deployment := testenv.UniqueName(t, "rie")
	// What the Terraform root passes (module.workflow.environment plus
	// WORKFLOW_BASE_URL), and what Lambda sets for every function.
	envFor := func(name string, timeout int) map[string]string {
		env := map[string]string{
			awsworld.EnvTable: table, awsworld.EnvQueueURL: queueURL,
			"AWS_REGION": region, "AWS_DEFAULT_REGION": region,
			"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
			"AWS_ENDPOINT_URL_DYNAMODB":       os.Getenv(testenv.EnvDynamoDB),
			"AWS_ENDPOINT_URL_SQS":            os.Getenv(testenv.EnvSQS),
			"AWS_EC2_METADATA_DISABLED":       "true",
			"AWS_LAMBDA_FUNCTION_NAME":        deployment + "-" + name,
			"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(timeout),
			"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		}
		if name != "webhook" {
			env[awsworld.EnvBaseURL] = webhookBase
		}
		if name == "sweeper" {
			env["CAIRN_METRICS_NAMESPACE"], env["CAIRN_METRICS_DEPLOYMENT"] = "cairn", deployment
		}
		return env
	}
	api := start(t, rie, "api", dirs["api"], envFor("api", 30))
	webhook := start(t, rie, "webhook", dirs["webhook"], envFor("webhook", 30))
	worker := start(t, rie, "worker", dirs["worker"], envFor("worker", 60))
	sweeper := start(t, rie, "sweeper", dirs["sweeper"], envFor("sweeper", 30))
	es := &eventSource{sqs: sqsc, queueURL: queueURL, queueARN: queueARN, region: region, worker: worker, deleted: map[string]bool{}}

	// A misspelt workflow is refused by the api, naming the one the worker runs.
	status, rerr := rpc(t, api, "runs.start", map[string]any{"workflowName": "deploy.Aproval", "runId": "typo"}, nil)
	if status != http.StatusBadRequest || rerr == nil || rerr.Code != "invalid_argument" || !strings.Contains(rerr.Message, "deploy.Approval") {
		t.Fatalf("runs.start of an unknown workflow: %d %+v, want 400 invalid_argument naming deploy.Approval", status, rerr)
	}

	runID := testenv.UniqueName(t, "release")
	startParams := map[string]any{"workflowName": "deploy.Approval", "runId": runID, "input": map[string]string{"subject": "release 1.2"}}
	for i := range 2 { // the CLI retries: the same run, one start message
		var run worlds.Run
		if status, rerr := rpc(t, api, "runs.start", startParams, &run); status != http.StatusOK || rerr != nil {
			t.Fatalf("runs.start #%d: %d %+v", i+1, status, rerr)
		}
		if run.RunID != runID || run.Status != worlds.RunPending {
			t.Fatalf("runs.start #%d: run %s %s, want %s pending", i+1, run.RunID, run.Status, runID)
		}
	}
	if n := testenv.QueueLen(t, sqsc, queueURL); n != 1 {
		t.Fatalf("after runs.start twice the task queue holds %d messages, want one start message", n)
	}

	// Beside the walk-through, a delivery of a workflow this worker does not
	// run (as from an older deployment) and a message that is not a delivery:
	// the worker must fail the first, leaving it queued, and acknowledge the second.
	w, err := awsworld.New(awsworld.Config{TableName: table, QueueURL: queueURL}, ddb, sqsc)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "deploy.Retired", RunID: testenv.UniqueName(t, "retired")}, worlds.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("not a delivery")}); err != nil {
		t.Fatal(err)
	}

	foreignFailed, junkAcked := 0, false
	// checkBatch asserts the worker's verdict on every record of b.
	checkBatch := func(b batch) {
		t.Helper()
		for _, r := range b.records {
			isForeign := strings.Contains(r.Body, foreign)
			switch {
			case isForeign && b.failed[r.MessageId]:
				foreignFailed++
			case isForeign:
				t.Errorf("the worker acknowledged the delivery of a workflow it does not run (%s)", r.Body)
			case b.failed[r.MessageId]:
				t.Errorf("the worker reported message %s (%s) in batchItemFailures", r.MessageId, r.Body)
			case r.Body == "not a delivery":
				junkAcked = true
			}
		}
	}
	var hook struct {
		Items []struct {
			Token      string `json:"token"`
			WebhookURL string `json:"webhookUrl"`
			RunID      string `json:"runId"`
		} `json:"items"`
	}
	for round := 0; len(hook.Items) == 0; round++ {
		if round == 10 {
			t.Fatalf("after %d worker invocations the run has no hook", round)
		}
		checkBatch(es.poll(t))
		if status, rerr := rpc(t, api, "hooks.list", map[string]any{"runId": runID}, &hook); status != http.StatusOK {
			t.Fatalf("hooks.list: %d %+v", status, rerr)
		}
	}
	if !junkAcked {
		t.Error("the message that is not a delivery was not acknowledged")
	}
	if len(hook.Items) != 1 || hook.Items[0].Token == "" || !strings.HasPrefix(hook.Items[0].WebhookURL, webhookBase+"/webhooks/") {
		t.Fatalf("hooks.list = %+v, want one hook with a URL under %s/webhooks/", hook.Items, webhookBase)
	}
	var run worlds.Run
	if status, rerr := rpc(t, api, "runs.get", map[string]any{"runId": runID}, &run); status != http.StatusOK || run.Status != worlds.RunRunning {
		t.Fatalf("runs.get while waiting for the decision: %d %+v %s, want running", status, rerr, run.Status)
	}

	// The webhook function serves only its route, and only for a live token.
	if status, body := webhook.url(t, http.MethodPost, webhookBase+"/webhooks/not-the-token", "application/json", `{"approved":true,"by":"mallory"}`); status != http.StatusNotFound {
		t.Fatalf("webhook with a wrong token: %d %s, want 404", status, body)
	}
	if status, body := webhook.url(t, http.MethodPost, webhookBase+"/rpc", "application/json", `{"method":"runs.get","params":{"runId":"`+runID+`"}}`); status != http.StatusNotFound {
		t.Fatalf("rpc through the webhook function: %d %s, want 404", status, body)
	}
	if status, body := webhook.url(t, http.MethodPost, hook.Items[0].WebhookURL, "application/json", `{"approved":true,"by":"dana"}`); status != http.StatusAccepted {
		t.Fatalf("webhook: %d %s, want 202", status, body)
	}

	for round := 0; run.Status != worlds.RunCompleted; round++ {
		if round == 10 || run.Status.Terminal() {
			t.Fatalf("after %d worker invocations following the decision the run is %s (error %v), want completed", round, run.Status, run.Error)
		}
		checkBatch(es.poll(t))
		if status, rerr := rpc(t, api, "runs.get", map[string]any{"runId": runID}, &run); status != http.StatusOK {
			t.Fatalf("runs.get: %d %+v", status, rerr)
		}
	}
	var output string
	if err := json.Unmarshal(run.Output, &output); err != nil || output != "release 1.2 approved by dana" {
		t.Fatalf("run output %s (%v), want \"release 1.2 approved by dana\"", run.Output, err)
	}

	// The failed delivery was left on the queue: SQS delivers it again, and the
	// worker fails it again.
	for round := 0; foreignFailed < 2; round++ {
		if round == 10 {
			t.Fatalf("the delivery the worker failed came back %d times in %d polls, want it left on the queue", foreignFailed, round)
		}
		checkBatch(es.poll(t))
	}
	if n := testenv.QueueLen(t, sqsc, queueURL); n != 1 {
		t.Errorf("the task queue holds %d messages at the end, want only the failed delivery", n)
	}

	// The sweep schedule invokes the sweeper with input "{}" (deploy/aws main.tf).
	logged := len(sweeper.out.String())
	var res awsworld.SweepResult
	if err := json.Unmarshal(sweeper.invoke(t, json.RawMessage(`{}`)), &res); err != nil {
		t.Fatalf("sweeper response: %v", err)
	}
	if len(res.Resent) != 0 {
		t.Errorf("the sweeper sent again %v, but no message was lost", res.Resent)
	}
	// The emulator copies the function's output asynchronously: the line may
	// follow the response by a moment on a loaded machine.
	m := metricsLine(sweeper.out.String()[logged:], deployment)
	for deadline := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(deadline); m = metricsLine(sweeper.out.String()[logged:], deployment) {
		time.Sleep(20 * time.Millisecond)
	}
	if m == nil {
		t.Errorf("the sweeper wrote no metrics line for deployment %s:\n%s", deployment, sweeper.out.String()[logged:])
	} else if m["ResentDeliveries"] != float64(len(res.Resent)) || m["OverdueDeliveries"] != float64(res.Overdue) {
		t.Errorf("the sweeper's metrics %v disagree with its result %+v", m, res)
	}
}

// metricsLine returns the Embedded Metric Format line of deployment in logs.
func metricsLine(logs, deployment string) map[string]any {
	for line := range strings.Lines(logs) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["Deployment"] == deployment && m["_aws"] != nil {
			return m
		}
	}
	return nil
}
