package awsworld_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/aws/schedulertest"
)

type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

type env struct {
	w          *awsworld.World
	db         *dynamodb.Client
	sqs        *sqs.Client
	url, arn   string
	sched      *schedulertest.Server
	clock      *clock
	cfg        awsworld.Config
	queueByARN map[string]string
}

// newEnv creates a table and a queue of its own, and a Scheduler fake sharing the
// World's clock.
func newEnv(t *testing.T, mut func(e *env, c *awsworld.Config)) *env {
	t.Helper()
	db := testenv.DynamoDB(t)
	sq := testenv.SQS(t)
	table := testenv.UniqueName(t, "wf")
	ctx := context.Background()
	if err := awsworld.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	url, arn := testenv.CreateQueue(t, sq, testenv.UniqueName(t, "q"), false)
	e := &env{db: db, sqs: sq, url: url, arn: arn, clock: &clock{}, queueByARN: map[string]string{arn: url}}
	e.sched = schedulertest.New(sq, e.clock.Now, func(a string) (string, error) {
		if u, ok := e.queueByARN[a]; ok {
			return u, nil
		}
		return "", fmt.Errorf("unknown target %s", a)
	})
	t.Cleanup(e.sched.Close)
	e.cfg = awsworld.Config{
		BaseURL: "https://example.com/v1/workflow", TableName: table, QueueURL: url, Clock: e.clock.Now,
		Logger:    slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Scheduler: &awsworld.SchedulerConfig{Client: e.sched.Client(testenv.AWSConfig(t)), TargetARN: arn, RoleARN: "arn:aws:iam::000000000000:role/scheduler"},
	}
	if mut != nil {
		mut(e, &e.cfg)
	}
	w, err := awsworld.New(e.cfg, db, sq)
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	return e
}

// advance moves the World's clock and the Scheduler fake's clock together.
func (e *env) advance(t *testing.T, d time.Duration) {
	t.Helper()
	e.clock.Advance(d)
	if err := e.sched.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// rawItem reads one item of the table as stored, consistently; nil when there
// is none.
func (e *env) rawItem(t *testing.T, pk, sk string) map[string]ddbAttr {
	t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.cfg.TableName),
		Key: map[string]ddbAttr{"pk": ddbS(pk), "sk": ddbS(sk)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// eventItemsOf reads a run's event items, in key order.
func (e *env) eventItemsOf(t *testing.T, runID string) []map[string]ddbAttr {
	t.Helper()
	out, err := e.db.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(e.cfg.TableName), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk AND begins_with(sk, :ev)"),
		ExpressionAttributeValues: map[string]ddbAttr{":pk": ddbS("RUN#" + runID), ":ev": ddbS("EVENT#")}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

func mustAppend(t *testing.T, w worlds.World, runID string, evs ...worlds.Event) []worlds.Event {
	t.Helper()
	out, err := w.Append(context.Background(), runID, evs...)
	if err != nil {
		t.Fatalf("append %v: %v", evs[0].Type, err)
	}
	return out
}

func TestAppendReadAndList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	mustAppend(t, e.w, "r1", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: json.RawMessage(`{"n":1}`)})
	mustAppend(t, e.w, "r1", worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "b", StepName: "second"},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "a", StepName: "first"})
	got := mustAppend(t, e.w, "r1", worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "b", Attempt: 1},
		worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "b", Output: json.RawMessage(`"ok"`)})
	if got[1].Seq != 6 || got[1].RunID != "r1" {
		t.Fatalf("stored %+v, want seq 6 of r1", got[1])
	}
	if _, err := e.w.Append(ctx, "r1", worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "b"}); !errors.Is(err, worlds.ErrStepFinished) {
		t.Fatalf("completing twice: %v", err)
	}
	if _, err := e.w.Append(ctx, "r1", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}); !errors.Is(err, worlds.ErrRunExists) {
		t.Fatalf("creating twice: %v", err)
	}
	run, err := e.w.GetRun(ctx, "r1")
	if err != nil || run.Status != worlds.RunRunning || run.EventCount != 6 || string(run.Input) != `{"n":1}` {
		t.Fatalf("run = %+v, %v", run, err)
	}
	steps, err := e.w.ListSteps(ctx, "r1", worlds.ListFilter{Limit: 1})
	if err != nil || len(steps.Items) != 1 || steps.Items[0].StepID != "b" || steps.Cursor == "" {
		t.Fatalf("steps page 1 = %+v, %v", steps, err)
	}
	steps, err = e.w.ListSteps(ctx, "r1", worlds.ListFilter{Limit: 1, Cursor: steps.Cursor})
	if err != nil || len(steps.Items) != 1 || steps.Items[0].StepID != "a" || steps.Cursor != "" {
		t.Fatalf("steps page 2 = %+v, %v", steps, err)
	}
	evs, err := e.w.ListEvents(ctx, "r1", worlds.EventFilter{AfterSeq: 2, Limit: 3})
	if err != nil || len(evs.Items) != 3 || evs.Items[0].Seq != 3 || evs.Cursor == "" {
		t.Fatalf("events = %+v, %v", evs, err)
	}
	all, err := worlds.AllEvents(ctx, e.w, "r1")
	if err != nil || len(all) != 6 {
		t.Fatalf("all events = %d, %v", len(all), err)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if _, err := e.w.ListEvents(ctx, "nope", worlds.EventFilter{}); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Fatalf("events of unknown run: %v", err)
	}
	mustAppend(t, e.w, "r2", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.B"})
	runs, err := e.w.ListRuns(ctx, worlds.RunFilter{})
	if err != nil || len(runs.Items) != 2 || runs.Items[0].RunID != "r2" {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	runs, err = e.w.ListRuns(ctx, worlds.RunFilter{WorkflowName: "flows.A"})
	if err != nil || len(runs.Items) != 1 || runs.Items[0].RunID != "r1" {
		t.Fatalf("runs of flows.A = %+v, %v", runs, err)
	}
	runs, err = e.w.ListRuns(ctx, worlds.RunFilter{Status: worlds.RunPending})
	if err != nil || len(runs.Items) != 1 || runs.Items[0].RunID != "r2" {
		t.Fatalf("pending runs = %+v, %v", runs, err)
	}
	runs, err = e.w.ListRuns(ctx, worlds.RunFilter{Limit: 1})
	if err != nil || len(runs.Items) != 1 || runs.Cursor == "" {
		t.Fatalf("runs page = %+v, %v", runs, err)
	}
	runs, err = e.w.ListRuns(ctx, worlds.RunFilter{Limit: 1, Cursor: runs.Cursor})
	if err != nil || len(runs.Items) != 1 || runs.Items[0].RunID != "r1" || runs.Cursor != "" {
		t.Fatalf("runs page 2 = %+v, %v", runs, err)
	}
}

func TestConcurrentAppendsLoseNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	mustAppend(t, e.w, "hot", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	const writers, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := e.w.Append(context.Background(), "hot", worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{fmt.Sprintf("g%d-%d", g, i): "x"}})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all, err := worlds.AllEvents(context.Background(), e.w, "hot")
	if err != nil || len(all) != 1+writers*each {
		t.Fatalf("got %d events, %v; want %d", len(all), err, 1+writers*each)
	}
	perWriter := map[string]int{}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		for k := range ev.Attributes {
			g, n, _ := strings.Cut(k, "-")
			if want := fmt.Sprint(perWriter[g]); n != want {
				t.Fatalf("writer %s: event %s out of order, want %s", g, n, want)
			}
			perWriter[g]++
		}
	}
	run, _ := e.w.GetRun(context.Background(), "hot")
	if len(run.Attributes) != writers*each {
		t.Fatalf("run has %d attributes, want %d", len(run.Attributes), writers*each)
	}
}

func TestHookTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, r := range []string{"ra", "rb"} {
		mustAppend(t, e.w, r, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunStarted})
	}
	mustAppend(t, e.w, "ra", worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "ha", Token: "tok"})
	got := mustAppend(t, e.w, "rb", worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hb", Token: "tok"})
	if got[0].Type != worlds.EventHookConflict {
		t.Fatalf("second claim stored as %s, want hook_conflict", got[0].Type)
	}
	h, err := e.w.GetHookByToken(ctx, "tok")
	if err != nil || h.HookID != "ha" {
		t.Fatalf("token owner = %+v, %v", h, err)
	}
	rc, err := worlds.ResumeHook(ctx, e.w, "tok", json.RawMessage(`{"ok":true}`))
	if err != nil || rc.RunID != "ra" {
		t.Fatalf("resume = %+v, %v", rc, err)
	}
	// Finishing the run disposes the hook and frees the token.
	mustAppend(t, e.w, "ra", worlds.Event{Type: worlds.EventRunCompleted})
	if _, err := e.w.GetHookByToken(ctx, "tok"); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Fatalf("token after run end: %v", err)
	}
	hook, _ := e.w.GetHook(ctx, "ha")
	if hook.Status != worlds.HookDisposed || hook.Received != 1 {
		t.Fatalf("hook = %+v", hook)
	}
	got = mustAppend(t, e.w, "rb", worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hb2", Token: "tok"})
	if got[0].Type != worlds.EventHookCreated {
		t.Fatalf("claim of a freed token stored as %s", got[0].Type)
	}
	hooks, err := e.w.ListHooks(ctx, worlds.HookFilter{RunID: "ra"})
	if err != nil || len(hooks.Items) != 1 || hooks.Items[0].HookID != "ha" {
		t.Fatalf("hooks of ra = %+v, %v", hooks, err)
	}
}

// incompressible is n bytes of JSON string content that DEFLATE shrinks by no
// more than a quarter (base64 of random bytes), so that tests of item sizes hold
// for run views, which are stored compressed.
func incompressible(n int) string {
	raw := make([]byte, n*3/4+3)
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	return base64.RawURLEncoding.EncodeToString(raw)[:n]
}

func TestLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	big := json.RawMessage(`"` + strings.Repeat("x", 410*1024) + `"`)
	_, err := e.w.Append(ctx, "big", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: big})
	if !errors.Is(err, worlds.ErrEventInvalid) || !errors.Is(err, worlds.ErrItemTooLarge) {
		t.Fatalf("oversized event: %v", err)
	}
	mustAppend(t, e.w, "many", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	var evs []worlds.Event
	for i := range 100 {
		input := json.RawMessage(`"` + incompressible(1024+i) + `"`)
		evs = append(evs, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("s%d", i), StepName: "x", Input: input})
	}
	// The events are packed into one item, and the run view is one more action,
	// but each new step is an item of its own: with a 1 KB input, none fits in
	// the run view.
	if _, err := e.w.Append(ctx, "many", evs[:99]...); !errors.Is(err, awsworld.ErrTooManyActions) || !errors.Is(err, worlds.ErrEventInvalid) {
		t.Fatalf("101 actions: %v", err)
	}
	if _, err := e.w.Append(ctx, "many", evs[:98]...); err != nil {
		t.Fatalf("100 actions: %v", err)
	}
	chunks := make([][]byte, 100)
	if _, err := e.w.WriteStream(ctx, "many", "s", chunks...); !errors.Is(err, worlds.ErrTooManyChunks) {
		t.Fatalf("100 chunks: %v", err)
	}
	if _, err := e.w.WriteStream(ctx, "many", "s", chunks[:99]...); err != nil {
		t.Fatalf("99 chunks: %v", err)
	}
	// IDs too long for a DynamoDB key are bad input, not a DynamoDB error.
	long := strings.Repeat("k", 5000)
	if _, err := e.w.Append(ctx, "many", worlds.Event{Type: worlds.EventStepCreated, CorrelationID: long, StepName: "x"}); !errors.Is(err, worlds.ErrEventInvalid) {
		t.Fatalf("5000-byte correlation ID: %v", err)
	}
	if _, err := e.w.Append(ctx, long, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("5000-byte run ID: %v", err)
	}
	if _, err := e.w.WriteStream(ctx, "many", long, []byte("x")); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("5000-byte stream name: %v", err)
	}
}

func TestStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	mustAppend(t, e.w, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	name := "out/💡 log"
	if i, err := e.w.WriteStream(ctx, "r", name, []byte("a"), []byte("b")); err != nil || i != 0 {
		t.Fatalf("write = %d, %v", i, err)
	}
	if i, err := e.w.WriteStream(ctx, "r", name, []byte("c")); err != nil || i != 2 {
		t.Fatalf("write = %d, %v", i, err)
	}
	page, err := e.w.ReadStream(ctx, "r", name, 1, 10)
	if err != nil || len(page.Chunks) != 2 || string(page.Chunks[0].Data) != "b" || page.Chunks[1].Index != 2 || page.Next != 3 || page.Closed {
		t.Fatalf("read = %+v, %v", page, err)
	}
	if err := e.w.CloseStream(ctx, "r", name); err != nil {
		t.Fatal(err)
	}
	if err := e.w.CloseStream(ctx, "r", name); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := e.w.WriteStream(ctx, "r", name, []byte("d")); !errors.Is(err, worlds.ErrStreamClosed) {
		t.Fatalf("write after close: %v", err)
	}
	page, _ = e.w.ReadStream(ctx, "r", name, 3, 10)
	if !page.Closed || len(page.Chunks) != 0 || page.Next != 3 {
		t.Fatalf("read at end = %+v", page)
	}
	if err := e.w.CloseStream(ctx, "r", "empty"); err != nil {
		t.Fatal(err)
	}
	infos, err := e.w.ListStreams(ctx, "r")
	if err != nil || len(infos) != 2 || infos[0].Name != "empty" || infos[1].Name != name || infos[1].Chunks != 3 || !infos[1].Closed {
		t.Fatalf("streams = %+v, %v", infos, err)
	}
	mustAppend(t, e.w, "r", worlds.Event{Type: worlds.EventRunCancelled})
	if _, err := e.w.WriteStream(ctx, "r", "late", []byte("x")); !errors.Is(err, worlds.ErrRunFinished) {
		t.Fatalf("write to a finished run: %v", err)
	}
}

// stepRunner is a trivial runtime: a workflow delivery starts the run and creates
// one step, the step delivery runs it, and the next workflow delivery completes
// the run. failFirst makes the first step attempt fail as if the worker died.
type stepRunner struct {
	mu        sync.Mutex
	failFirst bool
	// killFirst makes the first step attempt record step_started and then hang
	// until its invocation is killed.
	killFirst bool
	started   chan struct{}
	attempts  []int
	order     []string
}

func (r *stepRunner) Workflows() []string { return []string{"flows.A"} }

func (r *stepRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	run, err := w.GetRun(ctx, d.Input.RunID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.order = append(r.order, d.Input.RunID+":"+string(d.Input.Kind)+":"+d.Input.Trace["i"])
	r.mu.Unlock()
	wake := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: run.WorkflowName, RunID: run.RunID}
	switch d.Input.Kind {
	case worlds.DeliverStep:
		r.mu.Lock()
		r.attempts = append(r.attempts, d.Attempt)
		fail := r.failFirst && len(r.attempts) == 1
		r.mu.Unlock()
		if fail {
			return errors.New("step failed")
		}
		st, err := w.GetStep(ctx, run.RunID, d.Input.StepID)
		if err != nil {
			return err
		}
		r.mu.Lock()
		kill := r.killFirst && len(r.attempts) == 1
		r.mu.Unlock()
		if kill {
			if _, err := w.Append(ctx, run.RunID, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: st.StepID, Attempt: st.Attempt + 1}); err != nil {
				return err
			}
			close(r.started)
			<-ctx.Done()
			return ctx.Err()
		}
		if !st.Status.Terminal() {
			if _, err := w.Append(ctx, run.RunID, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: st.StepID, Attempt: st.Attempt + 1},
				worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: st.StepID, Output: json.RawMessage(`42`)}); err != nil {
				return err
			}
		}
		_, err = w.Queue(ctx, wake, worlds.QueueOptions{})
		return err
	case worlds.DeliverWorkflow:
		switch {
		case run.Status == worlds.RunPending:
			if _, err := w.Append(ctx, run.RunID, worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "answer"}); err != nil {
				return err
			}
			_, err = w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: run.WorkflowName, RunID: run.RunID, StepID: "s1"}, worlds.QueueOptions{})
			return err
		case run.Status == worlds.RunRunning:
			st, err := w.GetStep(ctx, run.RunID, "s1")
			if err != nil || st.Status != worlds.StepCompleted {
				return err
			}
			_, err = w.Append(ctx, run.RunID, worlds.Event{Type: worlds.EventRunCompleted, Output: st.Output})
			if errors.Is(err, worlds.ErrRunFinished) {
				return nil
			}
			return err
		}
	}
	return nil
}

// drain receives batches from the queues and feeds them to the Lambda handler,
// deleting what it acknowledged like the event source mapping does, until done.
func drain(t *testing.T, e *env, handler awsworld.SQSHandler, urls map[string]string, done func() bool) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("timed out draining the queue")
		}
		for arn, url := range urls {
			out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				continue
			}
			var ev events.SQSEvent
			for _, m := range out.Messages {
				ev.Records = append(ev.Records, events.SQSMessage{
					MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
					Attributes: m.Attributes, EventSourceARN: arn, EventSource: "aws:sqs",
				})
			}
			hctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			resp, err := handler(hctx, ev)
			cancel()
			if err != nil {
				continue // a failed invocation: Lambda deletes nothing, SQS redelivers the batch
			}
			failed := map[string]bool{}
			for _, f := range resp.BatchItemFailures {
				failed[f.ItemIdentifier] = true
			}
			for _, m := range out.Messages {
				if !failed[aws.ToString(m.MessageId)] {
					_, _ = e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
				}
			}
		}
	}
}

func startRun(t *testing.T, w *awsworld.World, runID string) {
	t.Helper()
	mustAppend(t, w, runID, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	if _, err := w.Queue(context.Background(), worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: runID}, worlds.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
}

func runDone(t *testing.T, w *awsworld.World, runIDs ...string) func() bool {
	return func() bool {
		for _, id := range runIDs {
			r, err := w.GetRun(context.Background(), id)
			if err != nil || r.Status != worlds.RunCompleted {
				return false
			}
		}
		return true
	}
}

func TestLambdaHandlerEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := &stepRunner{failFirst: true}
	startRun(t, e.w, "e2e")
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(r)), map[string]string{e.arn: e.url}, runDone(t, e.w, "e2e"))
	run, _ := e.w.GetRun(context.Background(), "e2e")
	if string(run.Output) != "42" {
		t.Fatalf("output = %s", run.Output)
	}
	// The step delivery failed once (killed mid-step) and was redelivered as attempt 2.
	if len(r.attempts) != 2 || r.attempts[0] != 1 || r.attempts[1] != 2 {
		t.Fatalf("step attempts = %v, want [1 2]", r.attempts)
	}
}

// The worker dies mid-step: the invocation fails after step_started, nothing is
// acknowledged, and SQS redelivers the message after its visibility timeout.
func TestDeliveryKilledMidStepIsRedelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, err := e.sqs.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(e.url),
		Attributes: map[string]string{"VisibilityTimeout": "1"}}); err != nil {
		t.Fatal(err)
	}
	r := &stepRunner{killFirst: true, started: make(chan struct{})}
	inner := awsworld.Queue(e.w, worlds.Runners(r))
	var killed atomic.Bool
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if killed.Load() {
			return inner(ctx, ev)
		}
		// Until the kill, each invocation dies as soon as the step has started.
		ctx, kill := context.WithCancel(ctx)
		defer kill()
		go func() {
			select {
			case <-r.started:
				kill()
			case <-ctx.Done():
			}
		}()
		resp, err := inner(ctx, ev)
		select {
		case <-r.started:
			killed.Store(true)
			return events.SQSEventResponse{}, errors.New("invocation killed")
		default:
			return resp, err
		}
	}
	startRun(t, e.w, "killed")
	drain(t, e, handler, map[string]string{e.arn: e.url}, runDone(t, e.w, "killed"))
	st, err := e.w.GetStep(context.Background(), "killed", "s1")
	if err != nil || st.Attempt != 2 || st.Status != worlds.StepCompleted {
		t.Fatalf("step = %+v, %v; want completed on attempt 2", st, err)
	}
	if len(r.attempts) < 2 || r.attempts[1] < 2 {
		t.Fatalf("deliveries of the step: receive counts %v, want a redelivery", r.attempts)
	}
}

func TestUnknownAndForeignMessagesAcknowledged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	h := awsworld.Queue(e.w, worlds.Runners(&stepRunner{}))
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: "not json", EventSourceARN: e.arn},
		{MessageId: "2", Body: `{"id":"missing"}`, EventSourceARN: e.arn},
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
}

func TestLongDelayThroughScheduler(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := &stepRunner{}
	mustAppend(t, e.w, "later", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	id, err := e.w.Queue(context.Background(), worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "later"},
		worlds.QueueOptions{DueAt: e.clock.Now().Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	scheds := e.sched.Schedules()
	if len(scheds) != 1 || scheds[0].Name != "go-workflow-"+id || !scheds[0].DeleteAfter || scheds[0].TargetARN != e.arn {
		t.Fatalf("schedules = %+v", scheds)
	}
	e.advance(t, 2*time.Hour+time.Second)
	if len(e.sched.Schedules()) != 0 || len(e.sched.Delivered()) != 1 {
		t.Fatalf("schedule not delivered and deleted: pending %v", e.sched.Schedules())
	}
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(r)), map[string]string{e.arn: e.url}, runDone(t, e.w, "later"))
}

func TestEarlyArrivalResentWithRemainingDelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := &stepRunner{}
	mustAppend(t, e.w, "early", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "early"}
	if _, err := e.w.Queue(context.Background(), in, worlds.QueueOptions{ID: "d1"}); err != nil {
		t.Fatal(err)
	}
	// Re-arm the same delivery 2 s later: the message already sent arrives early.
	if _, err := e.w.Queue(context.Background(), in, worlds.QueueOptions{ID: "d1", DueAt: e.clock.Now().Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(r)), map[string]string{e.arn: e.url}, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.order) > 0
	})
	if time.Since(start) < time.Second {
		t.Fatalf("delivery ran %v after queueing, before it was due", time.Since(start))
	}
}

func TestRetentionEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Retention = time.Second })
	ctx := context.Background()
	mustAppend(t, e.w, "old", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h-old", Token: "t-old"},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s", StepName: "x"})
	if _, err := e.w.WriteStream(ctx, "old", "log", []byte("x")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, e.w, "old", worlds.Event{Type: worlds.EventRunCompleted})
	// A retried terminal append queues the same fixed expiry again, not a second one.
	if _, err := e.w.Append(ctx, "old", worlds.Event{Type: worlds.EventRunCompleted}); !errors.Is(err, worlds.ErrRunFinished) {
		t.Fatal(err)
	}
	mustAppend(t, e.w, "keep", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(&stepRunner{})), map[string]string{e.arn: e.url}, func() bool {
		_, err := e.w.GetRun(ctx, "old")
		return errors.Is(err, worlds.ErrRunNotFound)
	})
	if _, err := e.w.GetHook(ctx, "h-old"); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Fatalf("hook survived expiry: %v", err)
	}
	out, err := e.db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(e.cfg.TableName), KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]ddbAttr{":pk": ddbS("RUN#old")}, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Items) != 0 {
		t.Fatalf("partition left %d items, %v", len(out.Items), err)
	}
	if _, err := e.w.GetRun(ctx, "keep"); err != nil {
		t.Fatalf("a pending run must never expire: %v", err)
	}
}

func TestFIFOOrderPerRun(t *testing.T) {
	t.Parallel()
	var fifoURL, fifoARN string
	e := newEnv(t, func(e *env, c *awsworld.Config) {
		fifoURL, fifoARN = testenv.CreateQueue(t, e.sqs, testenv.UniqueName(t, "o"), true)
		// Scheduler cannot set a deduplication ID: the seed requires content-based deduplication.
		if _, err := e.sqs.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(fifoURL),
			Attributes: map[string]string{"ContentBasedDeduplication": "true"}}); err != nil {
			t.Fatal(err)
		}
		e.queueByARN[fifoARN] = fifoURL
		c.Queues = map[string]awsworld.QueueConfig{"ordered": {URL: fifoURL, ARN: fifoARN, FIFO: true}}
		c.Routes = worlds.Routes(worlds.RouteEntry{Workflow: "flows.A", Queue: "ordered"})
	})
	if path.Ext(fifoURL) != ".fifo" {
		t.Fatalf("queue %s", fifoURL)
	}
	ctx := context.Background()
	r := &stepRunner{}
	for _, id := range []string{"f1", "f2"} {
		mustAppend(t, e.w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	}
	// Several deliveries per run, queued in order: each run sees them in that order.
	for i := range 3 {
		for _, id := range []string{"f1", "f2"} {
			kind := worlds.DeliverWorkflow
			if _, err := e.w.Queue(ctx, worlds.QueueInput{Kind: kind, WorkflowName: "flows.A", RunID: id, Trace: map[string]string{"i": fmt.Sprint(i)}}, worlds.QueueOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(r)), map[string]string{fifoARN: fifoURL}, runDone(t, e.w, "f1", "f2"))
	r.mu.Lock()
	seen := map[string][]string{}
	for _, o := range r.order {
		parts := strings.Split(o, ":")
		if parts[2] != "" {
			seen[parts[0]] = append(seen[parts[0]], parts[2])
		}
	}
	r.mu.Unlock()
	for _, id := range []string{"f1", "f2"} {
		if strings.Join(seen[id], ",") != "0,1,2" {
			t.Fatalf("run %s saw its deliveries in order %v, want 0,1,2", id, seen[id])
		}
	}
	// A delayed FIFO delivery goes through Scheduler into the run's group.
	mustAppend(t, e.w, "f3", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	if _, err := e.w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "f3"}, worlds.QueueOptions{DueAt: e.clock.Now().Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	sc := e.sched.Schedules()
	if len(sc) != 1 || sc[0].MessageGroupID != "f3" || sc[0].TargetARN != fifoARN || !strings.Contains(sc[0].Input, `"publish"`) {
		t.Fatalf("FIFO schedule = %+v", sc)
	}
	e.advance(t, 11*time.Second)
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(r)), map[string]string{fifoARN: fifoURL}, runDone(t, e.w, "f3"))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A hook still holding its token (written here directly, as a retained token would
// be) defers the expiry; once it lets go, the next expiry deletes the run.
func TestRetentionDefersWhileATokenIsRetained(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Retention = time.Second })
	ctx := context.Background()
	mustAppend(t, e.w, "held", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunCompleted})
	hook := func(status worlds.HookStatus) {
		data, _ := json.Marshal(worlds.Hook{RunID: "held", HookID: "h-held", Token: "t-held", Status: status, CreatedAt: time.Now()})
		_, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.cfg.TableName), Item: map[string]ddbAttr{
			"pk": ddbS("HOOK#h-held"), "sk": ddbS("META"), "data": ddbS(string(data)), "status": ddbS(string(status)),
			"list_group_pk": ddbS("HOOKS#held"), "list_group_sk": ddbS("2026#h-held"),
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	hook(worlds.HookActive)
	due := func() string {
		out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.cfg.TableName), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbAttr{"pk": ddbS("QUEUE#expire-held"), "sk": ddbS("META")}})
		if err != nil || out.Item == nil {
			t.Fatalf("expiry record: %v", err)
		}
		return out.Item["due_at"].(*ddbtypes.AttributeValueMemberS).Value
	}
	first := due()
	h := awsworld.Queue(e.w, worlds.Runners(&stepRunner{}))
	drain(t, e, h, map[string]string{e.arn: e.url}, func() bool { return due() != first })
	if _, err := e.w.GetRun(ctx, "held"); err != nil {
		t.Fatalf("run expired while a hook held its token: %v", err)
	}
	hook(worlds.HookDisposed)
	drain(t, e, h, map[string]string{e.arn: e.url}, func() bool {
		_, err := e.w.GetRun(ctx, "held")
		return errors.Is(err, worlds.ErrRunNotFound)
	})
	if _, err := e.w.GetHook(ctx, "h-held"); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Fatalf("hook found through list_group survived: %v", err)
	}
}

// blockingRunner hands each execution to the test, which decides its outcome.
type blockingRunner struct {
	calls chan worlds.Delivery
	out   chan error
}

func (blockingRunner) Workflows() []string { return []string{"flows.A"} }
func (r blockingRunner) Run(_ context.Context, _ worlds.World, d worlds.Delivery) error {
	r.calls <- d
	return <-r.out
}

// Two messages of one delivery (a send retried after its response was lost, or
// SQS handing one message to two receivers) must not run it at once: the second
// would find nothing to do, acknowledge, and delete the record while the first
// can still fail, and the first's retry would then find no record and the
// delivery would be lost. The record's lease makes them take turns, and the
// attempt counts executions across both messages.
func TestDuplicateMessagesOfADeliveryTakeTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	id, err := e.w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "r"}, worlds.QueueOptions{ID: "dup"})
	if err != nil {
		t.Fatal(err)
	}
	r := blockingRunner{calls: make(chan worlds.Delivery), out: make(chan error)}
	h := awsworld.Queue(e.w, r)
	msg := func(mid string) events.SQSEvent {
		return events.SQSEvent{Records: []events.SQSMessage{{MessageId: mid, Body: `{"id":"` + id + `"}`, EventSourceARN: e.arn,
			ReceiptHandle: "rh-" + mid, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}}
	}
	// invoke runs the handler on one message in the background.
	invoke := func(mid string) <-chan events.SQSEventResponse {
		out := make(chan events.SQSEventResponse, 1)
		go func() {
			resp, _ := h(ctx, msg(mid))
			out <- resp
		}()
		return out
	}
	first := invoke("m1")
	if d := <-r.calls; d.Attempt != 1 {
		t.Fatalf("first execution has attempt %d", d.Attempt)
	}
	// While the first runs, the duplicate is turned away without running.
	turnedAway := invoke("m2")
	select {
	case <-r.calls:
		r.out <- nil
		t.Fatal("the duplicate ran while the first execution was running")
	case resp := <-turnedAway:
		if len(resp.BatchItemFailures) != 1 {
			t.Fatalf("duplicate during the first execution: %+v; want it failed for later", resp)
		}
	}
	r.out <- errors.New("failed after its appends")
	if resp := <-first; len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failed execution reported %+v", resp)
	}
	// The duplicate now runs the delivery as its second attempt, and succeeds.
	second := invoke("m2")
	if d := <-r.calls; d.Attempt != 2 {
		t.Fatalf("duplicate runs as attempt %d, want 2", d.Attempt)
	}
	r.out <- nil
	if resp := <-second; len(resp.BatchItemFailures) != 0 {
		t.Fatalf("successful execution reported %+v", resp)
	}
	// The first message's retry finds the delivery done.
	done := invoke("m1")
	select {
	case d := <-r.calls:
		t.Fatalf("delivery ran again after it succeeded: %+v", d)
	case resp := <-done:
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("retry of a finished delivery reported %+v", resp)
		}
	}
}

// TestPackedEvents checks that an append's events share one item, that a single
// event keeps the layout of one JSON object, that packs too large for one item are
// split, and that ListEvents pages through packs from any position.
func TestPackedEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	eventItems := func(runID string) []string {
		t.Helper()
		var shapes []string
		for _, item := range e.eventItemsOf(t, runID) {
			sk := item["sk"].(*ddbtypes.AttributeValueMemberS).Value
			data, err := awsworld.DataJSON(item)
			if err != nil {
				t.Fatal(err)
			}
			shapes = append(shapes, strings.TrimLeft(sk[len("EVENT#"):], "0")+data[:1])
		}
		return shapes
	}

	mustAppend(t, e.w, "packed", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: wideInput})
	mustAppend(t, e.w, "packed",
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "x"},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1},
		worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s1", Output: json.RawMessage(`1`)})
	mustAppend(t, e.w, "packed", worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`1`)})
	// Keys are the last seq of each item; "{" is one event, "[" a pack. The
	// last append's event is still held in the run view, and each append wrote
	// out the one before it.
	if got, want := strings.Join(eventItems("packed"), " "), "1{ 5["; got != want {
		t.Fatalf("event items = %s, want %s", got, want)
	}
	if got := e.heldEventSeqs(t, "packed"); fmt.Sprint(got) != "[6]" {
		t.Fatalf("run view holds events %v, want [6]", got)
	}
	for limit := 1; limit <= 7; limit++ {
		for after := int64(0); after <= 6; after++ {
			var seqs []int64
			f := worlds.EventFilter{Limit: limit, AfterSeq: after}
			for pages := 0; ; pages++ {
				if pages > 6 {
					t.Fatalf("limit %d after %d: more than 6 pages for 6 events: %v", limit, after, seqs)
				}
				page, err := e.w.ListEvents(ctx, "packed", f)
				if err != nil {
					t.Fatalf("limit %d after %d: %v", limit, after, err)
				}
				if len(page.Items) > limit {
					t.Fatalf("limit %d after %d: page of %d", limit, after, len(page.Items))
				}
				for _, ev := range page.Items {
					seqs = append(seqs, ev.Seq)
				}
				if page.Cursor == "" {
					break
				}
				f.Cursor = page.Cursor
			}
			var want []int64
			for seq := after + 1; seq <= 6; seq++ {
				want = append(want, seq)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(want) {
				t.Fatalf("limit %d after %d: seqs %v, want %v", limit, after, seqs, want)
			}
		}
	}

	// Two events of 300 KB cannot share a 400 KB item.
	big := json.RawMessage(`"` + strings.Repeat("x", 300*1024) + `"`)
	mustAppend(t, e.w, "split", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	mustAppend(t, e.w, "split",
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "a", StepName: "x", Input: big},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "b", StepName: "x", Input: big},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "c", StepName: "x"})
	if got, want := strings.Join(eventItems("split"), " "), "1{ 2{ 4["; got != want {
		t.Fatalf("event items = %s, want %s", got, want)
	}
	page, err := e.w.ListEvents(ctx, "split", worlds.EventFilter{})
	if err != nil || len(page.Items) != 4 || string(page.Items[2].Input) != string(big) || page.Items[3].CorrelationID != "c" {
		t.Fatalf("split log: %d events, %v", len(page.Items), err)
	}
}
