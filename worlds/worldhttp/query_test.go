package worldhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// Counter counts to its input and sleeps; its "count" query answers the count
// plus the query's argument.
type Counter struct{}

func (Counter) Run(ctx workflow.Context, n int) (int, error) {
	count := 0
	if err := workflow.SetQueryHandler(ctx, "count", func(plus int) (int, error) { return count + plus, nil }); err != nil {
		return 0, err
	}
	for range n {
		out, err := workflow.Step(ctx, "inc", func(_ context.Context, c int) (int, error) { return c + 1, nil }, count)
		if err != nil {
			return 0, err
		}
		count = out
	}
	return count, workflow.Sleep(ctx, time.Hour)
}

// runs.query answers with the run's query handler through Options.Workflows,
// and maps unknown runs and handlers to 404, failures to 400, and a server
// without the workflow's code to 501.
func TestRPCQuery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	c, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx, workflow.Use(Counter{})) }()
	defer func() { cancel(); <-served }()
	run, err := workflow.Start(ctx, c, Counter{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := w.GetWait(ctx, run.ID(), "wait_4"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not reach its sleep")
		}
	}
	h := worldhttp.Handler(w, worldhttp.Options{Workflows: workflow.Use(Counter{})})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/workflow/rpc", strings.NewReader(`{"method":"runs.query","params":{"runId":"`+run.ID()+`","name":"count","arg":10}}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var res struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK || string(res.Result) != "13" {
		t.Fatalf("runs.query count 10: %d %s, want 13", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		h      http.Handler
		params string
		status int
		code   string
	}{
		{h, `{"runId":"nope","name":"count"}`, 404, "not_found"},
		{h, `{"runId":"` + run.ID() + `","name":"other"}`, 404, "not_found"},
		{h, `{"runId":"` + run.ID() + `","name":"count","arg":"ten"}`, 400, "invalid_argument"},
		{h, `{"runId":"` + run.ID() + `"}`, 400, "invalid_argument"},
		{worldhttp.Handler(w, worldhttp.Options{}), `{"runId":"` + run.ID() + `","name":"count"}`, 501, "not_implemented"},
	} {
		if code, eb := rpcCall(t, tc.h, `{"method":"runs.query","params":`+tc.params+`}`); code != tc.status || eb.Error.Code != tc.code {
			t.Errorf("runs.query %s: %d %+v, want %d %s", tc.params, code, eb, tc.status, tc.code)
		}
	}
	events, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := w.GetRun(ctx, run.ID()); r.EventCount != int64(len(events)) || events[len(events)-1].Type != worlds.EventWaitCreated {
		t.Fatalf("the log after queries ends with %s (%d events)", events[len(events)-1].Type, len(events))
	}
}
