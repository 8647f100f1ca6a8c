package local_test

import (
	"context"
	"fmt"
	"os"
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
	killedAt := local.KillChildWhen(t, "TestCrashChild", crashEnv, path, "child: running")

	w := open(t, local.Config{Path: path, PollInterval: 20 * time.Millisecond})
	local.ExpectRedelivery(t, w, "s1", "step-s1", killedAt)
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
