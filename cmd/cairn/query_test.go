package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// Parked answers "echo" with its argument and the hook it waits on.
type Parked struct{}

func (Parked) Run(ctx workflow.Context, _ struct{}) (string, error) {
	waiting := "nothing"
	if err := workflow.SetQueryHandler(ctx, "echo", func(arg map[string]any) (map[string]any, error) {
		return map[string]any{"arg": arg, "waiting": waiting}, nil
	}); err != nil {
		return "", err
	}
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{})
	if err != nil {
		return "", err
	}
	waiting = "hook"
	return h.Receive(ctx)
}

// cairn runs query RUN NAME JSON calls runs.query and prints the answer.
func TestRunsQuery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	world, err := local.Open(ctx, local.Config{Path: filepath.Join(t.TempDir(), "cairn.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- client.Serve(serveCtx, workflow.Use(Parked{})) }()
	defer func() { stop(); <-served }()
	run, err := workflow.Start(ctx, client, Parked{}, struct{}{}, workflow.WithRunID("parked-1"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if r, _ := world.GetRun(ctx, run.ID()); r.EventCount >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not reach its hook")
		}
	}
	srv := httptest.NewServer(worldhttp.RPC(world, worldhttp.Options{Workflows: workflow.Use(Parked{})}))
	defer srv.Close()
	getenv := func(k string) string { return map[string]string{"CAIRN_URL": srv.URL + "/v1/workflow"}[k] }
	var out bytes.Buffer
	if err := runsErr(ctx, []string{"query", "parked-1", "echo", `{"n":1}`, "--no-sign"}, &out, getenv); err != nil {
		t.Fatalf("runs query: %v", err)
	}
	if got := strings.Join(strings.Fields(out.String()), ""); got != `{"arg":{"n":1},"waiting":"hook"}` {
		t.Fatalf("runs query printed %s", out.String())
	}
	err = runsErr(ctx, []string{"query", "parked-1", "nope", "--no-sign"}, io.Discard, getenv)
	if err == nil || !strings.Contains(err.Error(), `no query handler "nope"`) || !strings.Contains(err.Error(), "echo") {
		t.Fatalf("runs query of an unknown handler: %v", err)
	}
	for _, args := range [][]string{{"query"}, {"query", "parked-1"}, {"query", "parked-1", "echo", "{x"}, {"query", "a", "b", "1", "2"}} {
		if _, ok := runsErr(ctx, args, io.Discard, getenv).(*usageError); !ok {
			t.Errorf("runs %q: not a usage error", args)
		}
	}
}
