package workflowtest_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

var record = flag.Bool("record", false, "record testdata/order_*.json: run OrderV1 on the embedded World and print the logs with `cairn inspect events --json --all`")

// TestRecordHistories writes the histories the replay tests read. It runs only
// with -record: go test -run TestRecordHistories -record ./workflow/workflowtest
func TestRecordHistories(t *testing.T) {
	if !*record {
		t.Skip("run with -record to record testdata/order_*.json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := filepath.Join(t.TempDir(), "cairn.db")
	world, err := local.Open(ctx, local.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	c, err := workflow.NewClient(workflow.Config{World: world})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- c.Serve(serveCtx, workflow.Use(OrderV1{})) }()

	done, err := workflow.Start(ctx, c, OrderV1{}, Order{ID: "ord-1", Cents: 2599}, workflow.WithRunID("wrun_order_completed"))
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := workflow.Start(ctx, c, OrderV1{}, Order{ID: "ord-2", Cents: 1200}, workflow.WithRunID("wrun_order_waiting"))
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"approve-ord-1", "approve-ord-2"} {
		for {
			if _, err := world.GetHookByToken(ctx, token); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, err := workflow.ResumeHook(ctx, c, "approve-ord-1", Approval{OK: true, By: "dana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := done.Result(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	<-served
	if err := world.Close(); err != nil {
		t.Fatal(err)
	}

	for file, run := range map[string]string{"order_completed.json": done.ID(), "order_waiting.json": waiting.ID()} {
		cmd := exec.CommandContext(ctx, "go", "run", "../../cmd/cairn", "inspect", "events", run, "--db", db, "--json", "--all")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cairn inspect events %s: %v", run, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", file), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
