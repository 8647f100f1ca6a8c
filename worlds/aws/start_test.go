package awsworld_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// queuedIDs receives every message of the queue at url until it is empty and
// returns the delivery IDs of their bodies, in receive order, deleting them.
func queuedIDs(t *testing.T, e *env, url string) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for empty := 0; empty < 2; {
		out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			var body struct{ ID string }
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &body); err != nil {
				t.Fatalf("message body %q: %v", aws.ToString(m.Body), err)
			}
			ids = append(ids, body.ID)
			if _, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

// A start retried with the same run ID and input (a lost answer, a CLI run
// twice) returns the run and sends no second start message: the worker would
// only receive the delivery twice, and the duplicate counts as a receive.
func TestRetriedStartSendsOneMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	input := json.RawMessage(`{"subject":"release 1.2"}`)
	for i := 0; i < 3; i++ {
		run, err := worlds.StartRun(ctx, e.w, "release-1.2", "flows.A", input, nil)
		if err != nil || run.Status != worlds.RunPending {
			t.Fatalf("start %d: %+v, %v", i+1, run, err)
		}
	}
	if ids := queuedIDs(t, e, e.url); len(ids) != 1 || ids[0] != "start-release-1.2" {
		t.Fatalf("messages after three starts = %q, want one start-release-1.2", ids)
	}
	// Another input under the same run ID is a conflict, and sends nothing.
	_, err := worlds.StartRun(ctx, e.w, "release-1.2", "flows.A", json.RawMessage(`{"subject":"release 1.3"}`), nil)
	var sce *worlds.StartConflictError
	if !errors.As(err, &sce) || sce.Field != "input" || !errors.Is(err, worlds.ErrRunExists) {
		t.Fatalf("start with another input = %v, want a *worlds.StartConflictError on input", err)
	}
	if ids := queuedIDs(t, e, e.url); len(ids) != 0 {
		t.Fatalf("a conflicting start sent %q", ids)
	}
}

// flakySQS fails SendMessage while fail is positive, counting down.
type flakySQS struct {
	*sqs.Client
	fail, sent atomic.Int32
}

func (f *flakySQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("flakySQS: connection reset")
	}
	out, err := f.Client.SendMessage(ctx, in, o...)
	if err == nil {
		f.sent.Add(1)
	}
	return out, err
}

// A start whose message could not be sent is sent by the retry the error asks
// for, not taken for a delivery already on its way; a later retry sends
// nothing more.
func TestStartRetriedAfterSendFailureSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	flaky := &flakySQS{Client: e.sqs}
	flaky.fail.Store(1)
	w, err := awsworld.New(e.cfg, e.db, flaky)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := worlds.StartRun(ctx, w, "r1", "flows.A", nil, nil); err == nil {
		t.Fatal("start with SendMessage failing: no error")
	}
	if ids := queuedIDs(t, e, e.url); len(ids) != 0 {
		t.Fatalf("messages after a failed send = %q", ids)
	}
	for i := 0; i < 2; i++ {
		if _, err := worlds.StartRun(ctx, w, "r1", "flows.A", nil, nil); err != nil {
			t.Fatalf("retry %d: %v", i+1, err)
		}
	}
	if ids := queuedIDs(t, e, e.url); len(ids) != 1 || ids[0] != "start-r1" {
		t.Fatalf("messages after the retries = %q, want one start-r1", ids)
	}
}

// A delivery queued again under its ID is sent again when it could be
// needed: due at another time than the pending message (a re-armed timer),
// or received since it was queued (the receive may have failed).
func TestQueueAgainAfterReceiveOrEarlierSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	counted := &flakySQS{Client: e.sqs}
	w, err := awsworld.New(e.cfg, e.db, counted)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "r2"}
	mustAppend(t, w, "r2", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	later := e.clock.Now().Add(awsworld.MaxSQSDelay / 2)
	for i, tc := range []struct {
		due   time.Time
		sends int32
	}{
		{later, 1},
		{later, 1},                  // the same due time: the message on its way is the delivery
		{later.Add(time.Second), 2}, // re-armed later: rewritten and sent, so it runs at the new time
		{time.Time{}, 3},            // due now, earlier: sent
		{time.Time{}, 3},            // due now again, and the pending message is due already
	} {
		if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: "d", DueAt: tc.due}); err != nil {
			t.Fatal(err)
		}
		if got := sends(counted); got != tc.sends {
			t.Fatalf("after Queue %d: %d messages sent, want %d", i+1, got, tc.sends)
		}
	}
	// The handler receives and fails it: queueing it again sends it again.
	var ran atomic.Int32
	fail := runnerFunc(func(context.Context, worlds.World, worlds.Delivery) error {
		ran.Add(1)
		return errors.New("fail")
	})
	drain(t, e, awsworld.Queue(w, worlds.Runners(fail)), map[string]string{e.arn: e.url}, func() bool { return ran.Load() > 0 })
	before := sends(counted)
	if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: "d"}); err != nil {
		t.Fatal(err)
	}
	if got := sends(counted); got != before+1 {
		t.Fatalf("a delivery queued again after a failed receive: %d messages sent, want %d", got, before+1)
	}
}

// sends counts the SendMessage calls f let through.
func sends(f *flakySQS) int32 { return f.sent.Load() }

// runnerFunc runs every delivery of flows.A with f.
type runnerFunc func(context.Context, worlds.World, worlds.Delivery) error

func (runnerFunc) Workflows() []string { return []string{"flows.A"} }
func (f runnerFunc) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	return f(ctx, w, d)
}

// With WithWorkflows, runs.start refuses a workflow name the worker does not
// run, with a 400 naming the known ones, and creates nothing.
func TestHTTPRefusesUnknownWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	srv := httptest.NewServer(awsworld.HTTP(e.w, awsworld.WithWorkflows(worlds.Runners(runnerFunc(nil)))))
	t.Cleanup(srv.Close)
	start := func(name string) (int, string) {
		body, _ := json.Marshal(map[string]any{"method": "runs.start", "params": map[string]any{"workflowName": name, "runId": "u-" + name}})
		resp, err := http.Post(srv.URL+"/v1/workflow/rpc", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if status, body := start("flows.Typo"); status != http.StatusBadRequest || !strings.Contains(body, `flows.Typo`) || !strings.Contains(body, "known workflows: flows.A") {
		t.Fatalf("unknown workflow: %d %s", status, body)
	}
	if _, err := e.w.GetRun(context.Background(), "u-flows.Typo"); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Fatalf("refused start created a run: %v", err)
	}
	if status, body := start("flows.A"); status != http.StatusOK {
		t.Fatalf("known workflow: %d %s", status, body)
	}
}
