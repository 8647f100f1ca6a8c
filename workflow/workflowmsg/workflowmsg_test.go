package workflowmsg_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/messaging/broker"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/messaging/router"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowmsg"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Order is a message body.
type Order struct {
	ID    string `json:"orderId"`
	Cents int    `json:"cents"`
}

// Fulfil counts its runs' charges: a second run for one order would charge twice.
type Fulfil struct{ charges *sync.Map }

func (f Fulfil) Run(ctx workflow.Context, o Order) (string, error) {
	return workflow.Step(ctx, "charge", func(_ context.Context, o Order) (string, error) {
		n, _ := f.charges.LoadOrStore(o.ID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return "charged " + o.ID, nil
	}, o)
}

// served is an embedded World served by a client running the workflows.
func served(t *testing.T, runners ...worlds.Runner) *workflow.Client {
	t.Helper()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	c, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, runners...) }()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	return c
}

func msg(id, body string, system map[string]string) *messagingtest.Message {
	m := messagingtest.NewMessage(body, nil)
	m.MessageID = id
	for k, v := range system {
		m.System[k] = v
	}
	return m
}

// A message delivered several times starts one run; a message keyed by a body
// field starts the run named by that field; a bad message is fatal.
func TestStartHandler(t *testing.T) {
	t.Parallel()
	charges := &sync.Map{}
	wf := Fulfil{charges: charges}
	c := served(t, workflow.Use(wf))
	ctx := context.Background()
	byID, err := workflowmsg.StartHandler(c, wf, workflowmsg.StartConfig[Order]{Prefix: "m-"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := workflowmsg.KeyBodyField("orderId")
	if err != nil {
		t.Fatal(err)
	}
	byOrder, err := workflowmsg.StartHandler(c, wf, workflowmsg.StartConfig[Order]{Key: key, Prefix: "order-"})
	if err != nil {
		t.Fatal(err)
	}
	m := msg("msg-1", `{"orderId":"A1","cents":500}`, nil)
	for range 3 { // a redelivered message
		if err := byID(ctx, m); err != nil {
			t.Fatalf("delivery of msg-1: %v", err)
		}
	}
	// The same order in two messages (a producer's resend) keyed by its field.
	for _, id := range []string{"msg-2", "msg-3"} {
		if err := byOrder(ctx, msg(id, `{"orderId":"B2","cents":700}`, nil)); err != nil {
			t.Fatalf("delivery of %s: %v", id, err)
		}
	}
	for _, runID := range []string{workflowmsg.RunID("m-", "msg-1"), "order-B2"} {
		run := workflow.Attach[string](c, runID)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := run.Result(rctx)
		cancel()
		if err != nil || !strings.HasPrefix(out, "charged ") {
			t.Fatalf("run %s: %q, %v", runID, out, err)
		}
	}
	runs, err := c.World().ListRuns(ctx, worlds.RunFilter{})
	if err != nil || len(runs.Items) != 2 {
		t.Fatalf("runs %+v, %v; want one per order", runs.Items, err)
	}
	for _, id := range []string{"A1", "B2"} {
		if n, _ := charges.Load(id); n.(*atomic.Int32).Load() != 1 {
			t.Errorf("order %s charged %d times", id, n.(*atomic.Int32).Load())
		}
	}
	for name, tc := range map[string]struct {
		h middleware.Handler
		m middleware.Message
	}{
		"not JSON":              {byID, msg("msg-4", `not json`, nil)},
		"wrong type":            {byID, msg("msg-5", `{"orderId":1}`, nil)},
		"no key field":          {byOrder, msg("msg-6", `{"cents":1}`, nil)},
		"other input, same key": {byOrder, msg("msg-7", `{"orderId":"B2","cents":1}`, nil)},
	} {
		err := tc.h(ctx, tc.m)
		var me *workflowmsg.MessageError
		if class, _ := merrors.Classify(err); class != merrors.FatalClass || !errors.Is(err, workflowmsg.ErrInvalidMessage) || !errors.As(err, &me) {
			t.Errorf("%s: %v, want a fatal MessageError", name, err)
		}
	}
	if _, err := workflowmsg.StartHandler(c, wf, workflowmsg.StartConfig[Order]{Prefix: "bad prefix"}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("a prefix with a space: %v, want ErrInvalidArgument", err)
	}
	if _, err := workflowmsg.KeyBodyField("a.["); err == nil {
		t.Error("a bad JMESPath expression was accepted")
	}
}

// failingWorld fails every call after its Append once armed, as a World that
// went away.
type failingWorld struct {
	worlds.World
	down atomic.Bool
}

func (f *failingWorld) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	if f.down.Load() {
		return worlds.Run{}, errors.New("database is locked")
	}
	return f.World.GetRun(ctx, runID)
}

func (f *failingWorld) Append(ctx context.Context, runID string, evs ...worlds.Event) ([]worlds.Event, error) {
	if f.down.Load() {
		return nil, errors.New("database is locked")
	}
	return f.World.Append(ctx, runID, evs...)
}

// A World failure is retryable, not fatal: the message comes back.
func TestStartHandlerTransient(t *testing.T) {
	t.Parallel()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fw := &failingWorld{World: w}
	fw.down.Store(true)
	c, err := workflow.NewClient(workflow.Config{World: fw})
	if err != nil {
		t.Fatal(err)
	}
	h, err := workflowmsg.StartHandler(c, Fulfil{charges: &sync.Map{}}, workflowmsg.StartConfig[Order]{})
	if err != nil {
		t.Fatal(err)
	}
	err = h(context.Background(), msg("m1", `{"orderId":"A"}`, nil))
	if class, _ := merrors.Classify(err); class != merrors.Retry || errors.Is(err, workflowmsg.ErrInvalidMessage) {
		t.Fatalf("World down: %v (%v), want a retryable error", err, class)
	}
}

// Through a broker on the in-memory SQS: a handler that fails after starting
// the run (as a process that dies before deleting the message) gets the
// message again, which finds its run and is deleted; one run, one charge.
func TestStartThroughBroker(t *testing.T) {
	t.Parallel()
	charges := &sync.Map{}
	wf := Fulfil{charges: charges}
	c := served(t, workflow.Use(wf))
	start, err := workflowmsg.StartHandler(c, wf, workflowmsg.StartConfig[Order]{})
	if err != nil {
		t.Fatal(err)
	}
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue("orders")
	if _, err := fake.Send(url, `{"orderId":"C3","cents":900}`, "", nil); err != nil {
		t.Fatal(err)
	}
	var deliveries atomic.Int32
	acked := make(chan struct{})
	r, err := router.New("orders", func(ctx context.Context, m middleware.Message) error {
		err := start(ctx, m)
		if deliveries.Add(1) == 1 {
			return errors.New("worker died before deleting the message")
		}
		if err == nil {
			close(acked)
		}
		return err
	}, router.WithWaitTimeSeconds(1), router.WithVisibilityTimeout(1), router.WithWorkerPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(fake, []*router.Route{r}, broker.WithLogger(logger.NewNoOp()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	select {
	case <-acked:
	case <-time.After(20 * time.Second):
		t.Fatal("the message was not redelivered and acknowledged")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	runs, err := c.World().ListRuns(context.Background(), worlds.RunFilter{})
	if err != nil || len(runs.Items) != 1 {
		t.Fatalf("runs %+v, %v; want one", runs.Items, err)
	}
	run := workflow.Attach[string](c, runs.Items[0].RunID)
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	if out, err := run.Result(rctx); err != nil || out != "charged C3" {
		t.Fatalf("Result = %q, %v", out, err)
	}
	if n, _ := charges.Load("C3"); n.(*atomic.Int32).Load() != 1 || fake.Len(url) != 0 {
		t.Fatalf("charged %d times, %d messages left", n.(*atomic.Int32).Load(), fake.Len(url))
	}
}

// Cart reads "item" signals until one is "checkout".
type Cart struct{}

func (Cart) Run(ctx workflow.Context, owner string) (string, error) {
	ch := workflow.NewSignalChannel[string](ctx, "item")
	var items []string
	for {
		it, err := ch.Receive(ctx)
		if err != nil {
			return "", err
		}
		if it == "checkout" {
			return owner + ": " + strings.Join(items, ","), nil
		}
		items = append(items, it)
	}
}

// The messages of a FIFO group reach one run, started by the first, in group
// order; a redelivered message is signalled once; an ended run is fatal.
func TestSignalWithStartHandler(t *testing.T) {
	t.Parallel()
	c := served(t, workflow.Use(Cart{}))
	ctx := context.Background()
	h, err := workflowmsg.SignalWithStartHandler(c, Cart{}, workflowmsg.SignalWithStartConfig[string]{
		Prefix: "cart-", Name: "item",
		Input:   func(m middleware.Message) (string, error) { return m.Attribute("owner"), nil },
		Payload: func(m middleware.Message) (any, error) { return m.Message(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	group := map[string]string{"MessageGroupId": "ana"}
	send := func(id, body string) error {
		m := msg(id, body, group)
		m.Attrs = map[string]string{"owner": "ana"}
		return h(ctx, m)
	}
	for i, body := range []string{"apple", "pear", "pear", "checkout"} {
		id := fmt.Sprintf("m%d", i)
		if body == "pear" && i == 2 {
			id = "m1" // the redelivery of m1
		}
		if err := send(id, body); err != nil {
			t.Fatalf("message %s: %v", id, err)
		}
	}
	run := workflow.Attach[string](c, "cart-ana")
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := run.Result(rctx); err != nil || out != "ana: apple,pear" {
		t.Fatalf("Result = %q, %v; want each item once, in order", out, err)
	}
	err = send("m9", "late")
	if class, _ := merrors.Classify(err); class != merrors.FatalClass || !errors.Is(err, workflowmsg.ErrInvalidMessage) {
		t.Fatalf("a message for an ended run: %v, want fatal", err)
	}
	plain, err := workflowmsg.SignalHandler(c, workflowmsg.SignalConfig{Prefix: "cart-", Name: "item"})
	if err != nil {
		t.Fatal(err)
	}
	err = plain(ctx, msg("m10", `"x"`, map[string]string{"MessageGroupId": "bob"}))
	if class, _ := merrors.Classify(err); class != merrors.Retry || !errors.Is(err, worlds.ErrRunNotFound) {
		t.Fatalf("a signal for a run not started yet: %v, want retryable", err)
	}
	if _, err := workflowmsg.SignalHandler(c, workflowmsg.SignalConfig{}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("SignalHandler without a name: %v", err)
	}
}

// Notify publishes its outcome, failing its first attempt after publishing.
type Notify struct {
	p        workflowmsg.Publisher
	topic    string
	attempts *atomic.Int32
}

func (n Notify) Run(ctx workflow.Context, order string) (string, error) {
	flaky := flakyPublisher{Publisher: n.p, attempts: n.attempts}
	return workflowmsg.Publish(ctx, flaky, "publish shipped", workflowmsg.Message{TopicARN: n.topic, Body: map[string]string{"order": order, "status": "shipped"}},
		workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
}

// flakyPublisher publishes, then reports a failure the first time, as a
// publish whose answer was lost.
type flakyPublisher struct {
	workflowmsg.Publisher
	attempts *atomic.Int32
}

func (f flakyPublisher) Publish(ctx context.Context, in *producer.PublishInput) (string, error) {
	id, err := f.Publisher.Publish(ctx, in)
	if f.attempts.Add(1) == 1 && err == nil {
		return "", errors.New("connection reset after publish")
	}
	return id, err
}

// A publish step retried after its first publish succeeded sends one message
// through a FIFO topic: the deduplication ID comes from the run and step.
func TestPublishOnce(t *testing.T) {
	t.Parallel()
	sqsFake := messagingtest.NewSQS()
	url, _ := sqsFake.AddQueue("shipped.fifo")
	sqsFake.SetContentBasedDeduplication(url, false)
	snsFake := messagingtest.NewSNS(sqsFake)
	topic := "arn:aws:sns:us-east-1:000000000000:shipped.fifo"
	snsFake.Subscribe(topic, url)
	p, err := producer.New(snsFake)
	if err != nil {
		t.Fatal(err)
	}
	wf := Notify{p: p, topic: topic, attempts: &atomic.Int32{}}
	c := served(t, workflow.Use(wf))
	ctx := context.Background()
	run, err := workflow.Start(ctx, c, wf, "D4", workflow.WithRunID("notify-D4"))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := run.Result(rctx); err != nil {
		t.Fatal(err)
	}
	if n := wf.attempts.Load(); n != 2 {
		t.Fatalf("%d publishes, want 2 (the test proves nothing otherwise)", n)
	}
	if got := sqsFake.Bodies(url); len(got) != 1 || !strings.Contains(got[0], "shipped") {
		t.Fatalf("queue holds %q, want the one message", got)
	}
}
