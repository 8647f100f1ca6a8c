package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// cairn runs signal RUN NAME JSON buffers the signal in the run's log through
// the RPC, and says what is wrong with a bad payload or an unknown run.
func TestRunsSignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if _, err := w.Append(ctx, "sig-1", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(worldhttp.Handler(w, worldhttp.Options{}))
	t.Cleanup(srv.Close)
	remote := []string{"--url", srv.URL + "/v1/workflow", "--no-sign"}
	noEnv := func(string) string { return "" }
	var out bytes.Buffer
	if err := runsErr(ctx, append([]string{"signal", "sig-1", "approve", `{"by":"ana"}`}, remote...), &out, noEnv); err != nil {
		t.Fatalf("runs signal: %v", err)
	}
	if !strings.Contains(out.String(), `"runId": "sig-1"`) {
		t.Errorf("runs signal printed %s, want the run", out.String())
	}
	if err := runsErr(ctx, append([]string{"signal", "sig-1", "ping"}, remote...), &out, noEnv); err != nil {
		t.Fatalf("runs signal without a payload: %v", err)
	}
	evs, err := worlds.AllEvents(ctx, w, "sig-1")
	if err != nil || len(evs) != 3 || evs[1].CorrelationID != "approve" || string(evs[1].Payload) != `{"by":"ana"}` || evs[2].CorrelationID != "ping" || string(evs[2].Payload) != "null" {
		t.Fatalf("log %+v, %v; want the two signals", evs, err)
	}
	var ue *usageError
	if err := runsErr(ctx, append([]string{"signal", "sig-1", "approve", "ana"}, remote...), &out, noEnv); !errors.As(err, &ue) || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("a payload that is not JSON: %v, want a usage error saying so", err)
	}
	if err := runsErr(ctx, append([]string{"signal", "sig-1"}, remote...), &out, noEnv); !errors.As(err, &ue) {
		t.Errorf("no signal name: %v, want a usage error", err)
	}
	if err := runsErr(ctx, append([]string{"signal", "nope", "approve"}, remote...), &out, noEnv); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Errorf("an unknown run: %v, want not_found", err)
	}
}
