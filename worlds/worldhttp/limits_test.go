package worldhttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// shapeRunner declares the input of workflow "flows.Order": an object with a
// non-empty string "id".
type shapeRunner struct{ worlds.Runner }

func (shapeRunner) Workflows() []string { return []string{"flows.Order"} }

func (shapeRunner) ValidateInput(name string, input json.RawMessage) error {
	var in struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.ID == nil || *in.ID == "" {
		return &worlds.InputError{Workflow: name, Field: "id", Reason: "required"}
	}
	return nil
}

func rpcCall(t *testing.T, h http.Handler, body string) (int, worldhttp.ErrorBody) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/workflow/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var eb worldhttp.ErrorBody
	_ = json.Unmarshal(rec.Body.Bytes(), &eb)
	return rec.Code, eb
}

// runs.start rejects what no World can store, before run_created is written.
func TestStartRejectsBadInput(t *testing.T) {
	t.Parallel()
	manyAttrs := map[string]string{}
	for i := range 2000 {
		manyAttrs[fmt.Sprint("k", i)] = "v"
	}
	attrs, _ := json.Marshal(manyAttrs)
	for _, tc := range []struct {
		name, params, field string
	}{
		{"NUL in runId", `{"workflowName":"flows.A","runId":"a\u0000b"}`, "runId"},
		{"5000-character runId", `{"workflowName":"flows.A","runId":"` + strings.Repeat("r", 5000) + `"}`, "runId"},
		{"slash in runId", `{"workflowName":"flows.A","runId":"a/b"}`, "runId"},
		{"2000 attributes", `{"workflowName":"flows.A","attributes":` + string(attrs) + `}`, "attributes"},
		{"long attribute value", `{"workflowName":"flows.A","attributes":{"k":"` + strings.Repeat("v", worlds.MaxAttributeValueLength+1) + `"}}`, "attributes.k"},
		{"number out of range", `{"workflowName":"flows.A","input":{"n":1e999999}}`, "input"},
		{"nested too deep", `{"workflowName":"flows.A","input":` + strings.Repeat("[", worlds.MaxJSONDepth+1) + strings.Repeat("]", worlds.MaxJSONDepth+1) + `}`, "input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newFake()
			code, eb := rpcCall(t, worldhttp.Handler(w, worldhttp.Options{}), `{"method":"runs.start","params":`+tc.params+`}`)
			if code != http.StatusBadRequest || eb.Error.Code != "invalid_argument" || !strings.Contains(eb.Error.Message, tc.field) {
				t.Fatalf("status %d %+v, want 400 invalid_argument naming %s", code, eb, tc.field)
			}
			if len(w.appends) != 0 || len(w.queued) != 0 {
				t.Fatalf("rejected start wrote %d events and queued %d deliveries", len(w.appends), len(w.queued))
			}
		})
	}
}

func TestStartValidatesInputShape(t *testing.T) {
	t.Parallel()
	opts := worldhttp.Options{Workflows: worlds.Runners(shapeRunner{})}
	for _, tc := range []struct {
		name, params string
		status       int
		msg          string
	}{
		{"valid", `{"workflowName":"flows.Order","input":{"id":"o1"}}`, http.StatusOK, ""},
		{"empty id", `{"workflowName":"flows.Order","input":{"id":""}}`, http.StatusBadRequest, `field "id"`},
		{"unknown workflow", `{"workflowName":"flows.Nope","input":{}}`, http.StatusBadRequest, "workflowName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newFake()
			code, eb := rpcCall(t, worldhttp.Handler(w, opts), `{"method":"runs.start","params":`+tc.params+`}`)
			if code != tc.status || !strings.Contains(eb.Error.Message, tc.msg) {
				t.Fatalf("status %d %+v, want %d naming %q", code, eb, tc.status, tc.msg)
			}
			if tc.status != http.StatusOK && len(w.appends) != 0 {
				t.Fatalf("rejected start wrote %d events", len(w.appends))
			}
		})
	}
}

func TestCancelRejectsLongReason(t *testing.T) {
	t.Parallel()
	w := newFake()
	h := worldhttp.Handler(w, worldhttp.Options{})
	if code, eb := rpcCall(t, h, `{"method":"runs.start","params":{"workflowName":"flows.A","runId":"r9"}}`); code != http.StatusOK {
		t.Fatalf("start: %d %+v", code, eb)
	}
	code, eb := rpcCall(t, h, `{"method":"runs.cancel","params":{"runId":"r9","reason":"`+strings.Repeat("x", worlds.MaxAttributeValueLength+1)+`"}}`)
	if code != http.StatusBadRequest || !strings.Contains(eb.Error.Message, "reason") {
		t.Fatalf("status %d %+v, want 400 naming reason", code, eb)
	}
}

func TestWebhookRejectsOutOfRangeNumber(t *testing.T) {
	t.Parallel()
	w := newFake()
	rec := httptest.NewRecorder()
	worldhttp.Handler(w, worldhttp.Options{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/workflow/webhooks/tok", strings.NewReader(`{"n":1e999999}`)))
	if rec.Code != http.StatusBadRequest || len(w.appends) != 0 {
		t.Fatalf("status %d, %d appends: want 400 and none", rec.Code, len(w.appends))
	}
}

func TestNonCanonicalPathsGetJSON404(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/v1/workflow/webhooks/.", "/v1/workflow/webhooks/..", "/v1/workflow//rpc", "/v1/workflow/rpc/."} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		req.URL.Path = p
		worldhttp.Handler(newFake(), worldhttp.Options{}).ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound || !json.Valid(rec.Body.Bytes()) {
			t.Errorf("%s: status %d body %q, want a JSON 404", p, rec.Code, rec.Body)
		}
	}
}

// runs.list passes its attributes filter to the World, which checks it.
func TestListRunsByAttributes(t *testing.T) {
	t.Parallel()
	w, err := local.Open(t.Context(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	h := worldhttp.Handler(w, worldhttp.Options{})
	for id, attrs := range map[string]map[string]string{"a": {"tier": "gold"}, "b": {"tier": "silver"}} {
		if _, err := w.Append(t.Context(), id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/workflow/rpc", strings.NewReader(`{"method":"runs.list","params":{"attributes":{"tier":"gold"}}}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	var res struct {
		Result worlds.Page[worlds.Run] `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK || len(res.Result.Items) != 1 || res.Result.Items[0].RunID != "a" {
		t.Fatalf("runs.list tier=gold: %d %s", rec.Code, rec.Body)
	}
	if code, eb := rpcCall(t, h, `{"method":"runs.list","params":{"attributes":{"":"x"}}}`); code != http.StatusBadRequest || eb.Error.Code != "invalid_argument" {
		t.Fatalf("runs.list with an empty key: %d %+v", code, eb)
	}
}
