package workflowui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow/workflowui"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// do sends a request with headers to the env's server and returns the status and body.
func (e *env) do(t *testing.T, method, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A page of another site open in the same browser cannot start runs through
// the UI's API or the RPC it mounts, whatever content type it manages to send;
// a trusted origin can.
func TestCrossOriginWritesAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnvOpts(t, nil, func(o *workflowui.Options) { o.TrustedOrigins = []string{"https://ops.example.com"} })
	const jsonCT = "application/json"
	start := `{"workflow":"devui.Approval","input":"mallory"}`
	rpcStart := `{"method":"runs.start","params":{"workflowName":"devui.Approval","input":"mallory"}}`
	for _, tc := range []struct {
		name, path, body string
		headers          map[string]string
		status           int
	}{
		{"API cross-site JSON", "/api/runs", start, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"API same-site other port", "/api/runs", start, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}, 403},
		{"API foreign Origin", "/api/runs", start, map[string]string{"Content-Type": jsonCT, "Origin": "https://evil.example"}, 403},
		{"API form", "/api/runs", start, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"API cancel cross-site", "/api/runs/any/cancel", `{}`, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site"}, 403},
		{"API signal cross-site", "/api/runs/any/signal", `{"name":"x"}`, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site"}, 403},
		{"API signal form", "/api/runs/any/signal", `name=x`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"RPC signal cross-site", "/v1/workflow/rpc", `{"method":"runs.signal","params":{"runId":"any","name":"x"}}`, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"RPC text/plain", "/v1/workflow/rpc", rpcStart, map[string]string{"Content-Type": "text/plain"}, 415},
		{"RPC cross-site JSON", "/v1/workflow/rpc", rpcStart, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
	} {
		status, body := e.do(t, "POST", tc.path, tc.body, tc.headers)
		if status != tc.status || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want %d with an error body", tc.name, status, body, tc.status)
		}
	}
	var runs worlds.Page[worlds.Run]
	e.call(t, "GET", "/api/runs", "", 200, &runs)
	if len(runs.Items) != 0 {
		t.Fatalf("refused writes started %d runs", len(runs.Items))
	}
	// The UI's own page (same-origin) and a trusted origin still can.
	for _, h := range []map[string]string{
		{"Content-Type": jsonCT, "Sec-Fetch-Site": "same-origin", "Origin": e.srv.URL},
		{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://ops.example.com"},
	} {
		if status, body := e.do(t, "POST", "/api/runs", start, h); status != http.StatusCreated {
			t.Fatalf("%v: %d %s", h, status, body)
		}
	}
	if status, body := e.do(t, "POST", "/v1/workflow/rpc", rpcStart, map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://ops.example.com"}); status != http.StatusOK {
		t.Fatalf("RPC from a trusted origin: %d %s", status, body)
	}
	if _, err := workflowui.Handler(e.world, workflowui.Options{TrustedOrigins: []string{"ops.example.com"}}); err == nil || !strings.Contains(err.Error(), "ops.example.com") {
		t.Fatalf("a malformed trusted origin: %v, want an error naming it", err)
	}
}

// The run view, its events and the RPC's hook views leave hook tokens out
// unless ShowTokens is set; the UI resumes hooks by ID either way.
func TestHookTokensHiddenUnlessShown(t *testing.T) {
	t.Parallel()
	for _, show := range []bool{false, true} {
		e := newEnvOpts(t, nil, func(o *workflowui.Options) { o.ShowTokens = show })
		id := e.start(t, `"tom"`)
		v := e.waitFor(t, id, activeHook)
		for _, tc := range []struct{ method, path, body string }{
			{"GET", "/api/runs/" + id, ""},
			{"GET", "/api/runs/" + id + "/events", ""},
			{"POST", "/v1/workflow/rpc", `{"method":"hooks.list","params":{"runId":"` + id + `"}}`},
			{"POST", "/v1/workflow/rpc", `{"method":"events.list","params":{"runId":"` + id + `"}}`},
		} {
			status, body := e.do(t, tc.method, tc.path, tc.body, map[string]string{"Content-Type": "application/json"})
			if status != 200 {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, status, body)
			}
			if strings.Contains(body, "approve-tom") != show {
				t.Fatalf("ShowTokens %v: %s %s answered %s", show, tc.method, tc.path, body)
			}
		}
		if v.Hooks[0].TokenHidden == show {
			t.Fatalf("ShowTokens %v: tokenHidden %v", show, v.Hooks[0].TokenHidden)
		}
		e.call(t, "POST", "/api/hooks/"+v.Hooks[0].HookID+"/resume", `{"by":"id"}`, 202, nil)
		e.waitFor(t, id, func(v runView) bool { return v.Run.Status == worlds.RunCompleted })
	}
}

// A live stream outlives the server's ReadTimeout and WriteTimeout: a chunk
// written after both have passed still arrives.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(ctx, "r-long", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "devui.Approval"}, worlds.Event{Type: worlds.EventRunStarted}); err != nil {
		t.Fatal(err)
	}
	ui, err := workflowui.Handler(w, workflowui.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	srv := httptest.NewUnstartedServer(ui)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeout, timeout
	srv.Start()
	defer srv.Close()
	go func() {
		time.Sleep(3 * timeout) // both deadlines of the stream's connection have passed
		if _, err := w.WriteStream(ctx, "r-long", "out", []byte("late")); err == nil {
			_ = w.CloseStream(ctx, "r-long", "out")
		}
	}()
	if texts := readSSE(t, srv.URL+"/api/runs/r-long/streams/out"); len(texts) != 1 || texts[0] != "late" {
		t.Fatalf("chunks %q, want the late one", texts)
	}
}

func TestBadAssetPathsAre404(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/assets/%ff%fe", "/assets/%00", "/assets/nope.js", "/assets/app.js%ff"} {
		status, body := e.do(t, "GET", p, "", nil)
		if status != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", p, status, body)
		}
	}
}

// No path, however malformed, makes the UI (with the RPC mounted) answer 5xx.
func FuzzPaths(f *testing.F) {
	for _, seed := range []string{
		"/assets/%ff%fe", "/assets/app.js", "/", "/api/runs/%ff", "/api/runs/x/streams/%fe%00",
		"/api/hooks/%c0/resume", "/v1/workflow/webhooks/%ff", "/assets/../api/runs", "/assets/%2e%2e/x",
		"/api/runs?limit=%ff", "/assets/a%00b", "/assets//app.js", "/%ff",
	} {
		f.Add("GET", seed)
		f.Add("POST", seed)
	}
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { w.Close() })
	ui, err := workflowui.Handler(w, workflowui.Options{RPC: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		if method != "GET" && method != "POST" && method != "HEAD" {
			method = "GET"
		}
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") {
			return // a server answers 400 before any handler runs
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, method, "/", strings.NewReader(`{}`))
		req.URL, req.RequestURI = u, target
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		ui.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", method, target, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Header().Get("Content-Type"), "json") && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: JSON answer is not JSON: %q", method, target, rec.Body)
		}
	})
}
