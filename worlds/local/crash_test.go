package local_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

const crashEnv = "CAIRN_LOCAL_CRASH_CHILD"

// TestKilledProcessResumes kills a process (SIGKILL) while it runs a delivery and
// serves the same file from this one: what the child committed is there, and the
// delivery it was running comes back, as a redelivery, once its lease ends.
func TestKilledProcessResumes(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("child side runs in TestCrashChild")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "child: running" {
				close(running)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("child never started its delivery")
	}
	killedAt := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	w := open(t, local.Config{Path: path, PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	step, err := w.GetStep(ctx, "r", "s1")
	if err != nil || step.Status != worlds.StepRunning {
		t.Fatalf("step the child started: %+v, %v", step, err)
	}
	got := make(chan worlds.Delivery, 1)
	serve(t, w, runnerFunc(func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		got <- d
		return nil
	}))
	select {
	case d := <-got:
		if d.ID != "step-s1" || d.Attempt != 2 {
			t.Errorf("after the crash got %+v, want step-s1 attempt 2", d)
		}
		if since := time.Since(killedAt); since > 20*time.Second {
			t.Errorf("redelivered after %s", since)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the killed process's delivery never came back")
	}
}

// TestCrashChild is the process TestKilledProcessResumes kills.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("only run by TestKilledProcessResumes")
	}
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: path, Lease: 500 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: "wf", RunID: "r", StepID: "s1"}, worlds.QueueOptions{ID: "step-s1"}); err != nil {
		t.Fatal(err)
	}
	w.Serve(ctx, runnerFunc(func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		if _, err := w.Append(ctx, "r", worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1}); err != nil {
			return err
		}
		fmt.Println("child: running")
		select {} // killed here
	}))
}
