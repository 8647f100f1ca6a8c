package worldhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// runs.signalWithStart creates the run with its signal, runs.signal adds more
// in order, and the errors name the run's state: 404 for an unknown run, 410
// for an ended one, 400 without a name.
func TestSignalMethods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	h := worldhttp.Handler(w, worldhttp.Options{})
	rpc := func(body string) (int, map[string]any) { return post(t, h, "/v1/workflow/rpc", body) }
	if code, out := rpc(`{"method":"runs.signalWithStart","params":{"workflowName":"flows.A","runId":"s1","input":{"a":1},"name":"go","payload":1}}`); code != http.StatusOK {
		t.Fatalf("runs.signalWithStart: %d %v", code, out)
	}
	if code, out := rpc(`{"method":"runs.signalWithStart","params":{"workflowName":"flows.A","runId":"s1","name":"go","payload":2}}`); code != http.StatusOK {
		t.Fatalf("runs.signalWithStart of the existing run: %d %v", code, out)
	}
	if code, out := rpc(`{"method":"runs.signal","params":{"runId":"s1","name":"go","payload":{"n":3}}}`); code != http.StatusOK {
		t.Fatalf("runs.signal: %d %v", code, out)
	}
	evs, err := worlds.AllEvents(ctx, w, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Payload))
	}
	if want := `[run_created  signal_received 1 signal_received 2 signal_received {"n":3}]`; fmt.Sprint(got) != want {
		t.Fatalf("log %v, want %s", got, want)
	}
	if _, err := w.Append(ctx, "s1", worlds.Event{Type: worlds.EventRunCancelled, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"unknown run", `{"method":"runs.signal","params":{"runId":"nope","name":"go"}}`, http.StatusNotFound},
		{"ended run", `{"method":"runs.signal","params":{"runId":"s1","name":"go"}}`, http.StatusGone},
		{"ended run, with start", `{"method":"runs.signalWithStart","params":{"workflowName":"flows.A","runId":"s1","name":"go"}}`, http.StatusGone},
		{"no name", `{"method":"runs.signal","params":{"runId":"s1"}}`, http.StatusBadRequest},
	} {
		if code, out := rpc(tc.body); code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, out, tc.code)
		}
	}
}
