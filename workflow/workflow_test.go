package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var fast = workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond})

// harness serves a World with a client until the test ends.
type harness struct {
	t *testing.T
	c *workflow.Client
	w worlds.World
}

func serve(t *testing.T, w worlds.World, cfg workflow.Config, runners ...worlds.Runner) *harness {
	t.Helper()
	cfg.World = w
	if cacheOff(t) {
		cfg.Cache.Disabled = true
	}
	c, err := workflow.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	sw, _ := w.(interface{ Serving() int })
	before := 0
	if sw != nil {
		before = sw.Serving()
	}
	go func() { defer close(done); _ = c.Serve(ctx, runners...) }()
	t.Cleanup(func() { cancel(); <-done })
	if sw != nil {
		// Start runs once the World serves, so they start eagerly.
		for deadline := time.Now().Add(5 * time.Second); sw.Serving() == before; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("Serve never started")
			}
		}
	}
	return &harness{t: t, c: c, w: w}
}

func resultCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counter counts side effects by key.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
	return c.n[k]
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// ThreeSteps adds one three times, failing the middle step FailTimes times.
type ThreeSteps struct {
	c         *counter
	failTimes int
	fatal     bool
}

type numIn struct{ N int }

func (w ThreeSteps) Run(ctx workflow.Context, in numIn) (int, error) {
	n := in.N
	for i, name := range []string{"a", "b", "c"} {
		v, err := workflow.Step(ctx, name, func(_ context.Context, x int) (int, error) {
			k := w.c.inc(name)
			if i == 1 && k <= w.failTimes {
				err := fmt.Errorf("transient %d", k)
				if w.fatal {
					return 0, workflow.Fatal(err)
				}
				return 0, err
			}
			return x + 1, nil
		}, n, fast)
		if err != nil {
			return 0, err
		}
		n = v
	}
	return n, nil
}

func testSteps(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	cases := []struct {
		name      string
		failTimes int
		fatal     bool
		want      int
		wantErr   bool
		wantB     int
		wantC     int
	}{
		{"succeed", 0, false, 4, false, 1, 1},
		{"retry then succeed", 2, false, 4, false, 3, 1},
		{"attempts exhausted", 3, false, 0, true, 3, 0},
		{"fatal stops retries", 1, true, 0, true, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &counter{}
			wf := ThreeSteps{c: c, failTimes: tc.failTimes, fatal: tc.fatal}
			h := serve(t, newWorld(t), workflow.Config{}, workflow.Use(wf))
			run, err := workflow.Start(context.Background(), h.c, wf, numIn{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Result(resultCtx(t))
			if tc.wantErr {
				var re *workflow.RunError
				if !errors.As(err, &re) || !errors.Is(err, workflow.ErrRunFailed) {
					t.Fatalf("err = %v, want a failed run", err)
				}
				if !strings.Contains(re.Info.Message, "transient") {
					t.Fatalf("persisted error %q does not carry the step error", re.Info.Message)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("Result = %d, %v; want %d", got, err, tc.want)
			}
			if c.get("a") != 1 || c.get("b") != tc.wantB || c.get("c") != tc.wantC {
				t.Fatalf("side effects a=%d b=%d c=%d, want 1/%d/%d", c.get("a"), c.get("b"), c.get("c"), tc.wantB, tc.wantC)
			}
			st, _ := run.Status(context.Background())
			if want := map[bool]worlds.RunStatus{false: worlds.RunCompleted, true: worlds.RunFailed}[tc.wantErr]; st != want {
				t.Fatalf("status %s, want %s", st, want)
			}
		})
	}
}

// Parallel fans out n steps with Go and sums them. Each step waits until all n have
// started, so the run only completes if the steps really run at the same time.
type Parallel struct{ barrier *barrier }

type barrier struct {
	mu      sync.Mutex
	n, seen int
	all     chan struct{}
}

func (b *barrier) arrive() error {
	b.mu.Lock()
	b.seen++
	if b.seen == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-time.After(10 * time.Second):
		return workflow.Fatal(errors.New("steps did not run in parallel"))
	}
}

func (w Parallel) Run(ctx workflow.Context, n int) (int, error) {
	var fs []*workflow.Future[int]
	for i := range n {
		fs = append(fs, workflow.Go(ctx, fmt.Sprintf("square %d", i), func(_ context.Context, x int) (int, error) {
			if err := w.barrier.arrive(); err != nil {
				return 0, err
			}
			return x * x, nil
		}, i, workflow.WithMaxAttempts(1)))
	}
	sum := 0
	for _, f := range fs {
		v, err := f.Get(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func testParallelFutures(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	wf := Parallel{barrier: &barrier{n: 4, all: make(chan struct{})}}
	h := serve(t, newWorld(t), workflow.Config{}, workflow.Use(wf))
	run, err := workflow.Start(context.Background(), h.c, wf, 4)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got != 0+1+4+9 {
		t.Fatalf("Result = %d, %v", got, err)
	}
}

// Sleeper sleeps and reports the workflow clock before and after.
type Sleeper struct{}

func (Sleeper) Run(ctx workflow.Context, d time.Duration) (time.Duration, error) {
	before := workflow.Now(ctx)
	if err := workflow.Sleep(ctx, d); err != nil {
		return 0, err
	}
	return workflow.Now(ctx).Sub(before), nil
}

func testSleep(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Sleeper{}))
	run, err := workflow.Start(context.Background(), h.c, Sleeper{}, 150*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	slept, err := run.Result(resultCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if slept < 150*time.Millisecond {
		t.Fatalf("workflow clock advanced %s across a 150ms sleep", slept)
	}
	wait, err := w.GetWait(context.Background(), run.ID(), "wait_1")
	if err != nil || wait.Status != worlds.WaitCompleted {
		t.Fatalf("wait_1 = %+v, %v", wait, err)
	}
}

// Approval waits for a hook payload.
type Approval struct{}

type decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

func (Approval) Run(ctx workflow.Context, token string) (string, error) {
	hook, err := workflow.CreateHook[decision](ctx, workflow.HookOptions{Token: token, Metadata: map[string]string{"kind": "approval"}})
	if err != nil {
		return "", err
	}
	d, err := hook.Receive(ctx)
	if err != nil {
		return "", err
	}
	if !d.Approved {
		return "rejected by " + d.By, nil
	}
	return "approved by " + d.By, nil
}

func waitForHook(t *testing.T, w worlds.World, token string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := w.GetHookByToken(context.Background(), token); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("hook %q never created", token)
}

func testHookResume(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Approval{}))
	run, err := workflow.Start(context.Background(), h.c, Approval{}, "tok-hook-resume")
	if err != nil {
		t.Fatal(err)
	}
	waitForHook(t, w, "tok-hook-resume")
	if _, err := workflow.ResumeHook(context.Background(), h.c, "nope", decision{}); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Fatalf("unknown token: err = %v", err)
	}
	rc, err := workflow.ResumeHook(context.Background(), h.c, "tok-hook-resume", decision{Approved: true, By: "ana"})
	if err != nil || rc.RunID != run.ID() {
		t.Fatalf("ResumeHook = %+v, %v", rc, err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got != "approved by ana" {
		t.Fatalf("Result = %q, %v", got, err)
	}
	// The run ended, so its hook was disposed and the token released.
	if _, err := workflow.ResumeHook(context.Background(), h.c, "tok-hook-resume", decision{}); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Fatalf("resume after run end: err = %v", err)
	}
}

func testHookConflict(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Approval{}))
	first, err := workflow.Start(context.Background(), h.c, Approval{}, "tok-shared")
	if err != nil {
		t.Fatal(err)
	}
	waitForHook(t, w, "tok-shared")
	second, err := workflow.Start(context.Background(), h.c, Approval{}, "tok-shared")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Result(resultCtx(t)); !errors.Is(err, workflow.ErrRunFailed) {
		t.Fatalf("second run: err = %v, want failed on the token conflict", err)
	}
	if err := first.Cancel(context.Background(), "test over"); err != nil {
		t.Fatal(err)
	}
}

func testCancel(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Sleeper{}))
	run, err := workflow.Start(context.Background(), h.c, Sleeper{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for st, _ := run.Status(context.Background()); st != worlds.RunRunning; st, _ = run.Status(context.Background()) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := run.Cancel(context.Background(), "customer changed their mind"); err != nil {
		t.Fatal(err)
	}
	_, err = run.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !errors.Is(err, workflow.ErrRunCancelled) || re.Info.Message != "customer changed their mind" {
		t.Fatalf("Result err = %v, want cancelled with the reason", err)
	}
	if err := run.Cancel(context.Background(), "again"); !errors.Is(err, worlds.ErrRunFinished) {
		t.Fatalf("second cancel: err = %v", err)
	}
}

// Streamer writes n chunks from a step, then waits for a hook so the reader can
// subscribe while the run is live.
type Streamer struct{}

func (Streamer) Run(ctx workflow.Context, n int) (int, error) {
	hook, err := workflow.CreateHook[int](ctx, workflow.HookOptions{Token: fmt.Sprintf("stream-%s", mustInfo(ctx).RunID)})
	if err != nil {
		return 0, err
	}
	more, err := hook.Receive(ctx)
	if err != nil {
		return 0, err
	}
	for _, batch := range []int{n, more} {
		if _, err := workflow.Step(ctx, "write", func(sctx context.Context, k int) (int, error) {
			for i := range k {
				if err := workflow.WriteStream(sctx, "progress", []byte(fmt.Sprintf("chunk %d", i))); err != nil {
					return 0, err
				}
			}
			return k, nil
		}, batch); err != nil {
			return 0, err
		}
	}
	return n + more, nil
}

func mustInfo(ctx context.Context) workflow.Info {
	info, _ := workflow.InfoFrom(ctx)
	return info
}

func testStreams(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Streamer{}))
	run, err := workflow.Start(context.Background(), h.c, Streamer{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	token := "stream-" + run.ID()
	waitForHook(t, w, token)
	// Read concurrently from before the first chunk to the close.
	var got []worlds.Chunk
	done := make(chan error, 1)
	go func() {
		for ch, err := range h.c.ReadStream(resultCtx(t), run.ID(), "progress") {
			if err != nil {
				done <- err
				return
			}
			got = append(got, ch)
		}
		done <- nil
	}()
	if _, err := workflow.ResumeHook(context.Background(), h.c, token, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(resultCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("read %d chunks, want 5: %v", len(got), got)
	}
	for i, ch := range got {
		if ch.Index != i {
			t.Fatalf("chunk %d has index %d: duplicates or gaps", i, ch.Index)
		}
	}
	// A reader starting after the end reads the backlog and stops.
	n := 0
	for _, err := range h.c.ReadStream(resultCtx(t), run.ID(), "progress") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("backlog read %d chunks, want 5", n)
	}
}

func TestWriteStreamOutsideStep(t *testing.T) {
	t.Parallel()
	if err := workflow.WriteStream(context.Background(), "x", []byte("y")); !errors.Is(err, workflow.ErrNotInStep) {
		t.Fatalf("err = %v, want ErrNotInStep", err)
	}
}
