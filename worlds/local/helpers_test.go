package local

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// ServeInTest serves w with r until the test ends or stop is called, and
// returns once Serve runs, so that starts after it can go eagerly.
func ServeInTest(t *testing.T, w *World, r worlds.Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	before := w.Serving()
	go func() { done <- w.Serve(ctx, r) }()
	for deadline := time.Now().Add(5 * time.Second); w.Serving() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Serve never started")
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// KillChildWhen runs the test named child in a process of its own with env
// set to value, kills it (SIGKILL) once it prints line, and returns when.
func KillChildWhen(t *testing.T, child, env, value, line string) time.Time {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == line {
				close(reached)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child %s never printed %q", child, line)
	}
	killedAt := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return killedAt
}

// ExpectRedelivery checks, in a process started after one that was killed at
// killedAt while its delivery deliveryID ran step stepID of run "r", that the
// step is still running in w and that the delivery comes back to this
// process's Serve as a redelivery (Attempt 2) once its lease ends.
func ExpectRedelivery(t *testing.T, w *World, stepID, deliveryID string, killedAt time.Time) {
	t.Helper()
	step, err := w.GetStep(context.Background(), "r", stepID)
	if err != nil || step.Status != worlds.StepRunning {
		t.Fatalf("step the child started: %+v, %v", step, err)
	}
	got := make(chan worlds.Delivery, 1)
	ServeInTest(t, w, eagerRunner{fn: func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		got <- d
		return nil
	}})
	select {
	case d := <-got:
		if d.ID != deliveryID || d.Attempt != 2 {
			t.Errorf("after the crash got %+v, want %s attempt 2", d, deliveryID)
		}
		if since := time.Since(killedAt); since > 20*time.Second {
			t.Errorf("redelivered after %s", since)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the killed process's delivery %s never came back", deliveryID)
	}
}
