package localtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

const childEnv = "CAIRN_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		if err := child(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func open(t *testing.T, path string) *local.World {
	t.Helper()
	w, err := local.Open(context.Background(), local.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func serve(t *testing.T, w worlds.World, runners ...worlds.Runner) *workflow.Client {
	t.Helper()
	c, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, runners...) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var fast = workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond})

// Order runs a flaky step, sleeps, waits for a hook and streams progress.
type Order struct {
	mu       sync.Mutex
	attempts map[string]int
}

func (o *Order) count(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts[k]++
	return o.attempts[k]
}

func (o *Order) Run(ctx workflow.Context, id string) (string, error) {
	charge, err := workflow.Step(ctx, "charge", func(sctx context.Context, id string) (string, error) {
		if o.count("charge") == 1 {
			return "", errors.New("processor timeout")
		}
		return "ch-" + id, workflow.WriteStream(sctx, "log", []byte("charged"))
	}, id, fast)
	if err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 50*time.Millisecond); err != nil {
		return "", err
	}
	hook, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: "confirm-" + id})
	if err != nil {
		return "", err
	}
	by, err := hook.Receive(ctx)
	if err != nil {
		return "", err
	}
	a := workflow.Go(ctx, "ship a", func(context.Context, string) (string, error) { return "A", nil }, id)
	b := workflow.Go(ctx, "ship b", func(context.Context, string) (string, error) { return "B", nil }, id)
	pa, err := a.Get(ctx)
	if err != nil {
		return "", err
	}
	pb, err := b.Get(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s confirmed by %s, parcels %s%s", charge, by, pa, pb), nil
}

func TestRuntimeOnLocal(t *testing.T) {
	t.Parallel()
	w := open(t, ":memory:")
	wf := &Order{attempts: map[string]int{}}
	c := serve(t, w, workflow.Use(wf))
	ctx := timeout(t)
	run, err := workflow.Start(ctx, c, wf, "o1")
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	streamDone := make(chan error, 1)
	go func() {
		for ch, err := range c.ReadStream(ctx, run.ID(), "log") {
			if err != nil {
				streamDone <- err
				return
			}
			chunks = append(chunks, string(ch.Data))
		}
		streamDone <- nil
	}()
	for {
		if _, err := workflow.ResumeHook(ctx, c, "confirm-o1", "dana"); err == nil {
			break
		} else if !errors.Is(err, worlds.ErrHookNotFound) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := run.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ch-o1 confirmed by dana, parcels AB"; got != want {
		t.Fatalf("Result = %q, want %q", got, want)
	}
	if err := <-streamDone; err != nil {
		t.Fatal(err)
	}
	if strings.Join(chunks, ",") != "charged" {
		t.Fatalf("stream = %v", chunks)
	}
	if n := wf.attempts["charge"]; n != 2 {
		t.Fatalf("charge ran %d times, want 2 (one retry)", n)
	}
}

func TestCancelOnLocal(t *testing.T) {
	t.Parallel()
	w := open(t, ":memory:")
	wf := &Order{attempts: map[string]int{}}
	c := serve(t, w, workflow.Use(wf))
	ctx := timeout(t)
	run, err := workflow.Start(ctx, c, wf, "o2")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := w.GetHookByToken(ctx, "confirm-o2"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := run.Cancel(ctx, "out of stock"); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); !errors.Is(err, workflow.ErrRunCancelled) {
		t.Fatalf("err = %v", err)
	}
	if _, err := workflow.ResumeHook(ctx, c, "confirm-o2", "late"); err == nil {
		t.Fatal("resumed the hook of a cancelled run")
	}
}

// Crashy records each step's side effect as a line in a file. Step "b" announces
// itself and then takes long enough for the parent to kill the process.
type Crashy struct{ dir string }

func (w Crashy) Run(ctx workflow.Context, _ int) (string, error) {
	var out []string
	for _, name := range []string{"a", "b", "c"} {
		v, err := workflow.Step(ctx, name, func(context.Context, int) (string, error) {
			if name == "b" {
				if err := record(w.dir, "b-start"); err != nil {
					return "", err
				}
				time.Sleep(1500 * time.Millisecond)
			}
			return name, record(w.dir, name)
		}, 0, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 5, InitialInterval: 10 * time.Millisecond}))
		if err != nil {
			return "", err
		}
		out = append(out, v)
	}
	return strings.Join(out, ""), nil
}

func record(dir, line string) error {
	f, err := os.OpenFile(filepath.Join(dir, "effects.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		return err
	}
	return f.Sync()
}

func effects(dir string) map[string]int {
	out := map[string]int{}
	f, err := os.Open(filepath.Join(dir, "effects.log"))
	if err != nil {
		return out
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		out[s.Text()]++
	}
	return out
}

// child serves the crash workflow on the file-backed World in dir, starting the run
// on first use, until the run ends.
func child(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := local.Open(ctx, local.Config{Path: filepath.Join(dir, "world.db"), Lease: 600 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	defer w.Close()
	c, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	wf := Crashy{dir: dir}
	if _, err := w.GetRun(ctx, "crash-run"); errors.Is(err, worlds.ErrRunNotFound) {
		if _, err := workflow.Start(ctx, c, wf, 0, workflow.WithRunID("crash-run")); err != nil {
			return err
		}
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- c.Serve(sctx, workflow.Use(wf)) }()
	out, err := workflow.Attach[string](c, "crash-run").Result(ctx)
	stop()
	<-served
	if err != nil {
		return err
	}
	fmt.Println("result:", out)
	return nil
}

func TestCrashAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for effects(dir)["b-start"] == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("step b never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if e := effects(dir); e["a"] != 1 || e["b"] != 0 {
		t.Fatalf("before restart: effects %v", e)
	}

	// A hung child is killed and its output reported instead of hanging the test.
	again := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	again.WaitDelay = time.Second
	again.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("restarted child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "result: abc") {
		t.Fatalf("restarted child output:\n%s", out)
	}
	e := effects(dir)
	if e["a"] != 1 || e["b"] != 1 || e["c"] != 1 {
		t.Fatalf("completed steps' side effects ran %v times, want a=1 b=1 c=1", e)
	}
	if e["b-start"] != 2 {
		t.Fatalf("b started %d times, want 2 (the killed attempt and its rerun)", e["b-start"])
	}
}
