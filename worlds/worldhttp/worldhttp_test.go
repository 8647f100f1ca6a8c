package worldhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// fakeWorld keeps one hook and records appends and queued deliveries; methods the
// handlers do not call stay unimplemented (the embedded nil interface).
type fakeWorld struct {
	worlds.World
	mu      sync.Mutex
	runs    map[string]*worlds.Run
	hooks   map[string]worlds.Hook // by token
	appends []worlds.Event
	queued  []worlds.QueueInput
}

func newFake() *fakeWorld {
	return &fakeWorld{runs: map[string]*worlds.Run{}, hooks: map[string]worlds.Hook{
		"tok": {RunID: "r1", HookID: "h1", Token: "tok", WorkflowName: "flows.A", Status: worlds.HookActive},
	}}
}

func (f *fakeWorld) Append(_ context.Context, runID string, evs ...worlds.Event) ([]worlds.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range evs {
		evs[i].RunID = runID
		switch evs[i].Type {
		case worlds.EventRunCreated:
			if f.runs[runID] != nil {
				return nil, &worlds.EventError{Kind: worlds.ErrConflict, Cause: worlds.ErrRunExists, RunID: runID, Type: evs[i].Type}
			}
			f.runs[runID] = &worlds.Run{RunID: runID, WorkflowName: evs[i].WorkflowName, Input: evs[i].Input, Status: worlds.RunPending}
		case worlds.EventRunCancelled:
			r := f.runs[runID]
			if r == nil {
				return nil, &worlds.EventError{Kind: worlds.ErrNotFound, Cause: worlds.ErrRunNotFound, RunID: runID, Type: evs[i].Type}
			}
			if r.Status.Terminal() {
				return nil, &worlds.EventError{Kind: worlds.ErrGone, Cause: worlds.ErrRunFinished, RunID: runID, Type: evs[i].Type}
			}
			r.Status = worlds.RunCancelled
		}
		f.appends = append(f.appends, evs[i])
	}
	return evs, nil
}

func (f *fakeWorld) GetRun(_ context.Context, runID string) (worlds.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.runs[runID]; r != nil {
		return *r, nil
	}
	return worlds.Run{}, fmt.Errorf("%w: %s", worlds.ErrRunNotFound, runID)
}

func (f *fakeWorld) GetHookByToken(_ context.Context, token string) (worlds.Hook, error) {
	if h, ok := f.hooks[token]; ok {
		return h, nil
	}
	return worlds.Hook{}, worlds.ErrHookNotFound
}

func (f *fakeWorld) Queue(_ context.Context, in worlds.QueueInput, _ worlds.QueueOptions) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued = append(f.queued, in)
	return "d", nil
}

func post(t *testing.T, h http.Handler, path, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s: response is not JSON: %q", path, rec.Body.String())
	}
	return rec.Code, out
}

func TestRPC(t *testing.T) {
	t.Parallel()
	f := newFake()
	h := worldhttp.Handler(f, worldhttp.Options{NewRunID: func() string { return "r9" }})
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"start", `{"method":"runs.start","params":{"workflowName":"flows.A","input":{"x":1}}}`, 200, ""},
		{"start twice", `{"method":"runs.start","params":{"workflowName":"flows.A","runId":"r9"}}`, 409, "conflict"},
		{"start without workflow", `{"method":"runs.start","params":{}}`, 400, "invalid_argument"},
		{"get", `{"method":"runs.get","params":{"runId":"r9"}}`, 200, ""},
		{"get unknown", `{"method":"runs.get","params":{"runId":"nope"}}`, 404, "not_found"},
		{"cancel", `{"method":"runs.cancel","params":{"runId":"r9","reason":"test"}}`, 200, ""},
		{"cancel again", `{"method":"runs.cancel","params":{"runId":"r9"}}`, 410, "gone"},
		{"unknown method", `{"method":"runs.explode"}`, 400, "invalid_argument"},
		{"unknown param", `{"method":"runs.get","params":{"run":"r9"}}`, 400, "invalid_argument"},
		{"not json", `{"method":`, 400, "invalid_argument"},
		{"params not an object", `{"method":"runs.get","params":[1]}`, 400, "invalid_argument"},
	}
	for _, tc := range cases { // sequential: the cases build on each other
		status, out := post(t, h, "/v1/workflow/rpc", tc.body)
		if status != tc.status {
			t.Fatalf("%s: status %d, want %d (%v)", tc.name, status, tc.status, out)
		}
		if tc.code != "" {
			e, _ := out["error"].(map[string]any)
			if e["code"] != tc.code || e["message"] == "" {
				t.Fatalf("%s: error body %v, want code %s", tc.name, out, tc.code)
			}
		}
	}
	// The start, the cancel and the refused cancel of the cancelled run (which
	// wakes it again, in case the first wake-up failed) each queue a delivery.
	if len(f.queued) != 3 || f.queued[0].RunID != "r9" || f.queued[0].Kind != worlds.DeliverWorkflow {
		t.Fatalf("queued %+v: start, cancel and cancel again must each wake the run", f.queued)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/workflow/rpc", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET rpc: %d", rec.Code)
	}
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.runs["r1"] = &worlds.Run{RunID: "r1", WorkflowName: "flows.A", Status: worlds.RunRunning}
	h := worldhttp.Webhook(f, worldhttp.Options{Prefix: "/hooks/", MaxBodyBytes: 64})
	if status, _ := post(t, h, "/hooks/webhooks/tok", `{"paid":true}`); status != http.StatusAccepted {
		t.Fatalf("status %d", status)
	}
	if status, _ := post(t, h, "/hooks/webhooks/tok", `a=1&b=2`); status != http.StatusAccepted {
		t.Fatalf("form body: status %d", status)
	}
	if got := string(f.appends[1].Payload); got != `"a=1\u0026b=2"` && got != `"a=1&b=2"` {
		t.Fatalf("non-JSON body stored as %s, want a JSON string", got)
	}
	if status, out := post(t, h, "/hooks/webhooks/unknown", `{}`); status != http.StatusNotFound {
		t.Fatalf("unknown token: %d %v", status, out)
	}
	if status, _ := post(t, h, "/hooks/webhooks/tok", strings.Repeat("x", 65)); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", status)
	}
	if status, _ := post(t, h, "/hooks/rpc", `{}`); status != http.StatusNotFound {
		t.Fatalf("the webhook handler must not serve rpc: %d", status)
	}
	long := strings.Repeat("t", worlds.MaxTokenLength+1)
	if status, _ := post(t, h, "/hooks/webhooks/"+long, `{}`); status != http.StatusBadRequest {
		t.Fatalf("oversized token: %d", status)
	}
}

func TestStatusOfNeverInternalForBadInput(t *testing.T) {
	t.Parallel()
	for _, err := range []error{worlds.ErrInvalidArgument, worlds.ErrItemTooLarge, &worlds.ArgumentError{Field: "x"}, worlds.ErrTooManyChunks} {
		if status, _ := worldhttp.StatusOf(err); status >= 500 {
			t.Errorf("StatusOf(%v) = %d", err, status)
		}
	}
	if status, _ := worldhttp.StatusOf(errors.New("dynamodb down")); status != 500 {
		t.Errorf("a World failure must be 500, got %d", status)
	}
}

// The rest of the World: empty listings and not-found lookups, validating limits as
// every World does.
func (f *fakeWorld) ListRuns(_ context.Context, filter worlds.RunFilter) (worlds.Page[worlds.Run], error) {
	_, err := worlds.PageLimit(filter.Limit)
	return worlds.Page[worlds.Run]{Items: []worlds.Run{}}, err
}
func (f *fakeWorld) ListEvents(_ context.Context, _ string, filter worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	_, err := worlds.PageLimit(filter.Limit)
	return worlds.Page[worlds.Event]{Items: []worlds.Event{}}, err
}
func (f *fakeWorld) GetStep(context.Context, string, string) (worlds.Step, error) {
	return worlds.Step{}, worlds.ErrStepNotFound
}
func (f *fakeWorld) ListSteps(_ context.Context, _ string, filter worlds.ListFilter) (worlds.Page[worlds.Step], error) {
	_, err := worlds.PageLimit(filter.Limit)
	return worlds.Page[worlds.Step]{Items: []worlds.Step{}}, err
}
func (f *fakeWorld) GetHook(context.Context, string) (worlds.Hook, error) {
	return worlds.Hook{}, worlds.ErrHookNotFound
}
func (f *fakeWorld) ListHooks(_ context.Context, filter worlds.HookFilter) (worlds.Page[worlds.Hook], error) {
	_, err := worlds.PageLimit(filter.Limit)
	return worlds.Page[worlds.Hook]{Items: []worlds.Hook{}}, err
}
func (f *fakeWorld) GetWait(context.Context, string, string) (worlds.Wait, error) {
	return worlds.Wait{}, worlds.ErrWaitNotFound
}
func (f *fakeWorld) ListStreams(context.Context, string) ([]worlds.StreamInfo, error) {
	return []worlds.StreamInfo{}, nil
}
func (f *fakeWorld) ReadStream(_ context.Context, _, _ string, from, limit int) (worlds.StreamPage, error) {
	if from < 0 {
		return worlds.StreamPage{}, &worlds.ArgumentError{Field: "from", Value: from, Reason: "negative"}
	}
	if _, err := worlds.PageLimit(limit); err != nil {
		return worlds.StreamPage{}, err
	}
	return worlds.StreamPage{}, worlds.ErrStreamNotFound
}
