package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// releaseFlow runs three steps and a fourth that fails while the release is broken.
type releaseFlow struct {
	mu     *sync.Mutex
	calls  map[string]int
	broken *atomic.Bool
}

func (f releaseFlow) Run(ctx workflow.Context, in int) (int, error) {
	n := in
	for _, name := range []string{"one", "two", "three", "four"} {
		var err error
		n, err = workflow.Step(ctx, name, func(_ context.Context, x int) (int, error) {
			f.mu.Lock()
			f.calls[name]++
			f.mu.Unlock()
			if name == "four" && f.broken.Load() {
				return 0, workflow.Fatal(errors.New("broken release"))
			}
			return x * 2, nil
		}, n)
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// cairn runs reset RUN --to last-step, against a server of the RPC, makes the
// new run, which completes under the fixed code without running steps 1-3 again.
func TestRunsReset(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	world, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	flow := releaseFlow{mu: &sync.Mutex{}, calls: map[string]int{}, broken: &atomic.Bool{}}
	flow.broken.Store(true)
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- client.Serve(serveCtx, workflow.Use(flow)) }()
	defer func() { stop(); <-served }()
	srv := httptest.NewServer(worldhttp.RPC(world, worldhttp.Options{}))
	defer srv.Close()
	getenv := func(k string) string {
		if k == "CAIRN_URL" {
			return srv.URL + "/v1/workflow"
		}
		return ""
	}

	run, err := workflow.Start(ctx, client, flow, 1, workflow.WithRunID("release-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err == nil {
		t.Fatal("the broken release's run did not fail")
	}
	flow.broken.Store(false)

	var out bytes.Buffer
	if err := runsErr(ctx, []string{"reset", "release-1", "--to", "last-step", "--new-run-id", "release-1b", "--no-sign"}, &out, getenv); err != nil {
		t.Fatal(err)
	}
	var printed worlds.Run
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil || printed.RunID != "release-1b" || printed.Attributes[worlds.AttrResetFrom] != "release-1" {
		t.Fatalf("printed %s (%v)", out.String(), err)
	}
	got, err := workflow.Attach[int](client, "release-1b").Result(ctx)
	if err != nil || got != 16 {
		t.Fatalf("new run: %d, %v; want 16", got, err)
	}
	flow.mu.Lock()
	defer flow.mu.Unlock()
	for name, want := range map[string]int{"one": 1, "two": 1, "three": 1, "four": 2} {
		if flow.calls[name] != want {
			t.Errorf("step %s ran %d times, want %d", name, flow.calls[name], want)
		}
	}
}

func TestRunsResetUsageErrors(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		if k == "CAIRN_URL" {
			return "http://127.0.0.1:1/v1/workflow"
		}
		return ""
	}
	for _, args := range [][]string{
		{"reset"},                        // no run
		{"reset", "r1", "--no-sign"},     // no --to
		{"reset", "r1", "--to", "first"}, // not a point
		{"reset", "r1", "--to", "0"},
		{"reset", "r1", "r2", "--to", "3"},
	} {
		err := runsErr(context.Background(), args, io.Discard, env)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("runs %v: %v, want a usage error", args, err)
		}
	}
}
