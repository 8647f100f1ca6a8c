package workflow_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

func testWebhookHandler(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Approval{}))
	run, err := workflow.Start(context.Background(), h.c, Approval{}, "tok-webhook")
	if err != nil {
		t.Fatal(err)
	}
	waitForHook(t, w, "tok-webhook")
	mux := http.NewServeMux()
	mux.Handle("/webhooks/{token}", h.c.WebhookHandler(workflow.WebhookOptions{MaxBodyBytes: 64}))
	cases := []struct {
		name, method, path, body string
		want                     int
	}{
		{"get", http.MethodGet, "/webhooks/tok-webhook", "", http.StatusMethodNotAllowed},
		{"unknown token", http.MethodPost, "/webhooks/nope", `{}`, http.StatusNotFound},
		{"not json", http.MethodPost, "/webhooks/tok-webhook", `approved`, http.StatusBadRequest},
		{"too large", http.MethodPost, "/webhooks/tok-webhook", `{"by":"` + strings.Repeat("x", 100) + `"}`, http.StatusRequestEntityTooLarge},
		{"ok", http.MethodPost, "/webhooks/tok-webhook", `{"approved":true,"by":"web"}`, http.StatusAccepted},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != tc.want {
			t.Fatalf("%s: status %d (%s), want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got != "approved by web" {
		t.Fatalf("Result = %q, %v", got, err)
	}
}

// Diverging takes its shape from a shared switch, to simulate a code change between
// deliveries.
type Diverging struct{ second *string }

func (w Diverging) Run(ctx workflow.Context, _ int) (string, error) {
	if _, err := workflow.Step(ctx, "first", func(context.Context, int) (int, error) { return 1, nil }, 0); err != nil {
		return "", err
	}
	if *w.second == "sleep" {
		return "", workflow.Sleep(ctx, time.Millisecond)
	}
	return workflow.Step(ctx, *w.second, func(context.Context, int) (string, error) { return "done", nil }, 0)
}

// Under FailOnCodeError, code that diverges from its run's log fails the run
// with the divergence; by default, the run is blocked on it and completes once
// the code is deterministic again.
func TestNondeterminism(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, changeTo, wantIn string
		block                  bool
	}{
		{"renamed step", "other", `history has step "second" (step_2), code asked for step "other"`, false},
		{"step became sleep", "sleep", `history has step "second" (step_2), code asked for sleep`, false},
		{"renamed step blocks", "other", `history has step "second" (step_2), code asked for step "other"`, true},
		{"step became sleep blocks", "sleep", `history has step "second" (step_2), code asked for sleep`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := memworld.New()
			name := "second"
			wf := Diverging{second: &name}
			policy := workflow.FailOnCodeError
			if tc.block {
				policy = workflow.BlockOnCodeError
			}
			// Queued steps, so the code can change between the deliveries of one run,
			// and no run cache, which would resume the first code instead of
			// replaying the second.
			c, err := workflow.NewClient(workflow.Config{World: w, QueueSteps: true, Cache: workflow.CacheConfig{Disabled: true}, BlockedRetry: fastBlocked})
			if err != nil {
				t.Fatal(err)
			}
			r := c.Runner(workflow.Use(wf, workflow.OnCodeError(policy)))
			run, err := workflow.Start(context.Background(), c, wf, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Drive deliveries by hand until step_2 is created, then change the code.
			for i := 0; i < 20; i++ {
				if _, err := w.GetStep(context.Background(), run.ID(), "step_2"); err == nil {
					break
				}
				w.RunOne(context.Background(), r)
			}
			name = tc.changeTo
			if tc.block {
				testBlockedThenFixed(t, w, r, run.ID(), tc.wantIn, func() { name = "second" })
				return
			}
			for i := 0; i < 20; i++ {
				if st, _ := run.Status(context.Background()); st.Terminal() {
					break
				}
				w.RunOne(context.Background(), r)
			}
			_, err = run.Result(resultCtx(t))
			var re *workflow.RunError
			if !errors.As(err, &re) || !strings.Contains(re.Info.Message, tc.wantIn) || !strings.Contains(re.Info.Message, "operation 2") {
				t.Fatalf("err = %v, want nondeterminism naming %q at operation 2", err, tc.wantIn)
			}
		})
	}
}

func TestDuplicateDeliveriesDoNotRerunSteps(t *testing.T) {
	t.Parallel()
	c := &counter{}
	wf := ThreeSteps{c: c}
	w := memworld.New(memworld.DuplicateDeliveries())
	h := serve(t, w, workflow.Config{}, workflow.Use(wf))
	run, err := workflow.Start(context.Background(), h.c, wf, numIn{N: 10})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got != 13 {
		t.Fatalf("Result = %d, %v", got, err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if n := c.get(k); n != 1 {
			t.Fatalf("step %s ran %d times under duplicate delivery", k, n)
		}
	}
}

func TestRedeliveryAfterCompletion(t *testing.T) {
	t.Parallel()
	c := &counter{}
	wf := ThreeSteps{c: c}
	w := memworld.New()
	cl, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.FlushCache)
	r := cl.Runner(workflow.Use(wf))
	run, err := workflow.Start(context.Background(), cl, wf, numIn{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	var seen []worlds.Delivery
	for i := 0; i < 50; i++ {
		if st, _ := run.Status(context.Background()); st.Terminal() {
			break
		}
		seen = append(seen, w.Queued()...)
		w.RunOne(context.Background(), r)
	}
	// Every delivery arrives again, as a redelivery (Attempt 2).
	for _, d := range seen {
		d.Attempt = 1
		w.Redeliver(d)
	}
	for i := 0; i < 5; i++ {
		w.RunOne(context.Background(), r)
	}
	if got, err := run.Result(resultCtx(t)); err != nil || got != 3 {
		t.Fatalf("Result = %d, %v", got, err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if n := c.get(k); n != 1 {
			t.Fatalf("step %s ran %d times after redelivery", k, n)
		}
	}
}

// recorder is an Observer counting callbacks.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) RunStarted(ctx context.Context, info workflow.Info) context.Context {
	r.add("run started")
	return ctx
}

func (r *recorder) RunFinished(ctx context.Context, info workflow.Info, st worlds.RunStatus, err error) context.Context {
	r.add("run " + string(st))
	return ctx
}

func (r *recorder) StepStarted(ctx context.Context, info workflow.Info) context.Context {
	r.add("start " + info.StepName)
	return ctx
}

func (r *recorder) StepFinished(ctx context.Context, info workflow.Info, o workflow.StepOutcome) context.Context {
	r.add(string(o.Result) + " " + info.StepName)
	return ctx
}

// Logging logs from workflow code around two steps.
type Logging struct{ log *slog.Logger }

func (w Logging) Run(ctx workflow.Context, _ int) (int, error) {
	w.log.InfoContext(ctx, "begin")
	a, err := workflow.Step(ctx, "a", func(sctx context.Context, _ int) (int, error) {
		w.log.InfoContext(sctx, "in step")
		return 1, nil
	}, 0)
	if err != nil {
		return 0, err
	}
	w.log.InfoContext(ctx, "after a")
	b, err := workflow.Step(ctx, "b", func(context.Context, int) (int, error) { return 2, nil }, 0, fast)
	w.log.InfoContext(ctx, "end")
	return a + b, err
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testReplayAwareLoggingAndObserver(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	buf := &syncBuf{}
	log := slog.New(workflow.NewLogHandler(slog.NewTextHandler(buf, nil)))
	obs := &recorder{}
	wf := Logging{log: log}
	h := serve(t, newWorld(t), workflow.Config{Observer: obs}, workflow.Use(wf))
	run, err := workflow.Start(context.Background(), h.c, wf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(resultCtx(t)); err != nil || got != 3 {
		t.Fatalf("Result = %d, %v", got, err)
	}
	out := buf.String()
	for _, msg := range []string{"msg=begin", "msg=\"in step\"", "msg=\"after a\"", "msg=end"} {
		if n := strings.Count(out, msg); n != 1 {
			t.Fatalf("%s logged %d times despite replays:\n%s", msg, n, out)
		}
	}
	if !strings.Contains(out, "workflow.step_name=a") || !strings.Contains(out, "workflow.attempt=1") || strings.Count(out, "workflow.run_id="+run.ID()) != 4 {
		t.Fatalf("identity attributes missing or repeated:\n%s", out)
	}
	// RunFinished follows the append Result sees; give it a moment.
	want := "run started, start a, completed a, start b, completed b, run completed"
	var got string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		obs.mu.Lock()
		got = strings.Join(obs.events, ", ")
		obs.mu.Unlock()
		if got == want || time.Now().After(deadline) {
			break
		}
	}
	if got != want {
		t.Fatalf("observer saw %q, want %q", got, want)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	w := memworld.New()
	c, err := workflow.NewClient(workflow.Config{World: w, MaxPayloadBytes: 32})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Start(context.Background(), c, Approval{}, strings.Repeat("x", 40)); !errors.Is(err, workflow.ErrTooLarge) {
		t.Fatalf("oversized input: err = %v", err)
	}
	if _, err := workflow.NewClient(workflow.Config{}); !errors.Is(err, workflow.ErrInvalidConfig) {
		t.Fatalf("no World: err = %v", err)
	}
	if _, err := workflow.NewClient(workflow.Config{World: w, PollInterval: -1}); !errors.Is(err, workflow.ErrInvalidConfig) {
		t.Fatalf("negative poll: err = %v", err)
	}
	// Nothing was written for the rejected start.
	page, _ := w.ListRuns(context.Background(), worlds.RunFilter{})
	if len(page.Items) != 0 {
		t.Fatalf("rejected start wrote %d runs", len(page.Items))
	}
	// A delivery for a workflow this runner does not know is refused.
	err = workflow.Use(Approval{}).Run(context.Background(), w, worlds.Delivery{Input: worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "nope.Nope", RunID: "r"}})
	if !errors.Is(err, workflow.ErrUnknownWorkflow) {
		t.Fatalf("unknown workflow: err = %v", err)
	}
}

// Unserialisable returns a value JSON cannot encode.
type Unserialisable struct{}

func (Unserialisable) Run(ctx workflow.Context, _ int) (chan int, error) { return make(chan int), nil }

func testNonSerialisableResult(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	h := serve(t, newWorld(t), workflow.Config{}, workflow.Use(Unserialisable{}))
	run, err := workflow.Start(context.Background(), h.c, Unserialisable{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !strings.Contains(re.Info.Message, "workflow output") {
		t.Fatalf("err = %v, want a failed run naming the workflow output", err)
	}
}

// Rehook disposes a hook and takes its token again with a second one.
type Rehook struct{}

func (Rehook) Run(ctx workflow.Context, token string) (string, error) {
	first, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	if err := first.Dispose(ctx); err != nil {
		return "", err
	}
	if _, err := first.Receive(ctx); !errors.Is(err, workflow.ErrHookDisposed) {
		return "", errors.New("receive on a disposed hook did not fail")
	}
	second, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	return second.Receive(ctx)
}

func testHookDispose(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Rehook{}))
	run, err := workflow.Start(context.Background(), h.c, Rehook{}, "tok-rehook")
	if err != nil {
		t.Fatal(err)
	}
	waitForHook(t, w, "tok-rehook")
	hook, _ := w.GetHookByToken(context.Background(), "tok-rehook")
	if !strings.HasPrefix(hook.HookID, "hook_2.") {
		t.Fatalf("token owned by %s, want the second hook", hook.HookID)
	}
	if _, err := workflow.ResumeHook(context.Background(), h.c, "tok-rehook", "second"); err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(resultCtx(t)); err != nil || got != "second" {
		t.Fatalf("Result = %q, %v", got, err)
	}
	first, err := w.GetHook(context.Background(), "hook_1."+run.ID())
	if err != nil || first.Status != worlds.HookDisposed {
		t.Fatalf("first hook = %+v, %v", first, err)
	}
}

// gatedWorld holds the first Append until released, so a test can order it
// against another delivery's writes.
type gatedWorld struct {
	worlds.World
	once             sync.Once
	reached, release chan struct{}
}

func (g *gatedWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	g.once.Do(func() { close(g.reached); <-g.release })
	return g.World.Append(ctx, runID, events...)
}

// queueFailingWorld fails every Queue call, as a throttled queue would.
type queueFailingWorld struct{ worlds.World }

func (queueFailingWorld) Queue(context.Context, worlds.QueueInput, worlds.QueueOptions) (string, error) {
	return "", errors.New("injected: queue throttled")
}

// Two copies of one wake-up race: A appends the next step and fails to queue it;
// B loaded the log before A's append, so its own append conflicts, and on
// re-reading it finds nothing left to append. B must queue the step itself: on
// Worlds where the copies share one queue record, B's success acknowledges the
// delivery and A's retry never comes.
func TestConflictLoserQueuesWhatTheWinnerMayNotHave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	wf := ThreeSteps{c: &counter{}}
	w := memworld.New()
	cl, err := workflow.NewClient(workflow.Config{World: w, QueueSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.FlushCache)
	r := cl.Runner(workflow.Use(wf))
	run, err := workflow.Start(ctx, cl, wf, numIn{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	// Run until step a is done and its wake-up is queued.
	var wake *worlds.Delivery
	for i := 0; wake == nil && i < 20; i++ {
		w.RunOne(ctx, r)
		if wf.c.get("a") == 0 {
			continue
		}
		for _, d := range w.Queued() {
			if d.Input.Kind == worlds.DeliverWorkflow {
				wake = &d
			}
		}
	}
	if wake == nil {
		t.Fatal("no wake-up queued after step a")
	}
	d := *wake
	d.Attempt = 1
	b := &gatedWorld{World: w, reached: make(chan struct{}), release: make(chan struct{})}
	bDone := make(chan error, 1)
	go func() { bDone <- r.Run(ctx, b, d) }()
	<-b.reached
	if err := r.Run(ctx, queueFailingWorld{w}, d); err == nil {
		t.Fatal("A succeeded although queueing failed")
	}
	close(b.release)
	if err := <-bDone; err != nil {
		t.Fatalf("B: %v", err)
	}
	queued := false
	for _, q := range w.Queued() {
		queued = queued || q.Input.Kind == worlds.DeliverStep
	}
	if !queued {
		t.Fatalf("after the race no delivery of step b is queued; run %s would stall", run.ID())
	}
}

// outcomeLostWorld fails the first n appends of a step_completed, as a World
// that stays unreachable for a while after a step ran.
type outcomeLostWorld struct {
	worlds.World
	mu sync.Mutex
	n  int
}

func (o *outcomeLostWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	o.mu.Lock()
	fail := events[0].Type == worlds.EventStepCompleted && o.n > 0
	if fail {
		o.n--
	}
	o.mu.Unlock()
	if fail {
		return nil, errors.New("injected: World unreachable")
	}
	return o.World.Append(ctx, runID, events...)
}

// worldRunner runs deliveries against a World of the test's choosing.
type worldRunner struct {
	inner worlds.Runner
	world worlds.World
}

func (r worldRunner) Workflows() []string { return r.inner.Workflows() }
func (r worldRunner) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	return r.inner.Run(ctx, r.world, d)
}

// A step runs inline in the workflow's delivery, recorded as started by that
// delivery. When its outcome cannot be recorded, the delivery fails; its
// redelivery finds the step started under its own ID and queues the next
// attempt, which completes the run.
func TestInlineStepWhoseOutcomeIsLostRunsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &counter{}
	wf := ThreeSteps{c: c}
	w := memworld.New()
	cl, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.FlushCache)
	// The append the outcome goes with, then one round of the runtime's retries
	// of the outcome alone.
	lossy := &outcomeLostWorld{World: w, n: 7}
	r := worldRunner{inner: cl.Runner(workflow.Use(wf)), world: lossy}
	run, err := workflow.Start(ctx, cl, wf, numIn{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnded(ctx, w, r, run)
	if st, _ := run.Status(ctx); !st.Terminal() {
		evs, _ := worlds.AllEvents(ctx, w, run.ID())
		for _, ev := range evs {
			t.Logf("%d %s %s attempt=%d delivery=%q", ev.Seq, ev.Type, ev.CorrelationID, ev.Attempt, ev.DeliveryID)
		}
		t.Logf("queued: %+v", w.Queued())
	}
	if got, err := run.Result(resultCtx(t)); err != nil || got != 3 {
		t.Fatalf("Result = %d, %v", got, err)
	}
	events, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	var starts []string
	for _, ev := range events {
		if ev.Type == worlds.EventStepStarted {
			starts = append(starts, fmt.Sprintf("%s#%d inline=%t", ev.CorrelationID, ev.Attempt, ev.DeliveryID != ""))
		}
	}
	// Step a ran inline and lost its outcome, then ran as attempt 2 in a step
	// delivery; b and c ran inline.
	want := []string{"step_1#1 inline=true", "step_1#2 inline=false", "step_2#1 inline=true", "step_3#1 inline=true"}
	if strings.Join(starts, ", ") != strings.Join(want, ", ") {
		t.Fatalf("step starts %v, want %v", starts, want)
	}
	if c.get("a") != 2 || c.get("b") != 1 || c.get("c") != 1 {
		t.Fatalf("executions a=%d b=%d c=%d, want 2, 1, 1", c.get("a"), c.get("b"), c.get("c"))
	}
}

// handOffRunner runs deliveries with a hand-off time already past, as the AWS
// World's handler does for messages it starts late in an invocation.
type handOffRunner struct{ inner worlds.Runner }

func (r handOffRunner) Workflows() []string { return r.inner.Workflows() }
func (r handOffRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	return r.inner.Run(worlds.WithHandOff(ctx, time.Now().Add(-time.Second)), w, d)
}

// Past the entry point's hand-off time, a step is queued rather than run inline,
// so it does not die with the invocation; with time to spare it runs inline.
func TestStepsAfterHandOffAreQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, late := range []bool{false, true} {
		c := &counter{}
		wf := ThreeSteps{c: c}
		w := memworld.New()
		cl, err := workflow.NewClient(workflow.Config{World: w})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.FlushCache)
		var r worlds.Runner = cl.Runner(workflow.Use(wf))
		if late {
			r = handOffRunner{inner: r}
		}
		if _, err := workflow.Start(ctx, cl, wf, numIn{N: 0}); err != nil {
			t.Fatal(err)
		}
		w.RunOne(ctx, r) // the start delivery
		steps := 0
		for _, d := range w.Queued() {
			if d.Input.Kind == worlds.DeliverStep {
				steps++
			}
		}
		if late && (c.get("a") != 0 || steps != 1) {
			t.Fatalf("after hand-off: step a ran %d times inline, %d step deliveries queued; want 0 and 1", c.get("a"), steps)
		}
		if !late && (c.get("c") != 1 || steps != 0) {
			t.Fatalf("before hand-off: step c ran %d times, %d step deliveries queued; want all steps inline", c.get("c"), steps)
		}
	}
}

// runUntilEnded runs w's deliveries with r until run ends or nothing is left
// queued that could move it.
func runUntilEnded[O any](ctx context.Context, w *memworld.World, r worlds.Runner, run *workflow.Run[O]) {
	for i := 0; i < 200; i++ {
		if st, _ := run.Status(ctx); st.Terminal() {
			return
		}
		if n, _ := w.RunOne(ctx, r); n == 0 {
			if len(w.Queued()) == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond) // a failed delivery comes back 20ms later
		}
	}
}
