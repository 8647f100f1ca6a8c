package workflowui_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowui"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// newRemoteEnv serves the UI as `cairn ui` does, over the World alone, with no
// client and no runners, mounted under /ops/ of the user's own mux; the
// workflow's worker runs beside it as another process would.
func newRemoteEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := local.Open(ctx, local.Config{Path: filepath.Join(t.TempDir(), "ui.db"), PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ui, err := workflowui.Handler(w, workflowui.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", ui))
	served := make(chan error, 1)
	go func() { served <- worker.Serve(ctx, workflow.Use(approval{})) }()
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
		w.Close()
	})
	return &env{srv: srv, world: w, prefix: "/ops"}
}

// Without a client or runners the UI starts, cancels, resumes and re-runs through
// the World, and the worker elsewhere does the work.
func TestWorldOnlyUnderPrefix(t *testing.T) {
	t.Parallel()
	e := newRemoteEnv(t)
	id := e.start(t, `"cy"`)
	v := e.waitFor(t, id, activeHook)
	if !v.Runnable || v.Webhooks {
		t.Fatalf("runnable %v webhooks %v: want re-runs allowed and no webhook endpoint", v.Runnable, v.Webhooks)
	}
	e.call(t, "POST", "/api/runs/"+id+"/cancel", `{}`, 200, nil)
	v = e.waitFor(t, id, func(v runView) bool { return v.Run.Status.Terminal() })
	if v.Run.Status != worlds.RunCancelled || v.Run.Attributes["cancel_reason"] == "" {
		t.Fatalf("after cancel: %s %v", v.Run.Status, v.Run.Attributes)
	}
	var again struct{ RunID string }
	e.call(t, "POST", "/api/runs/"+id+"/rerun", "", 201, &again)
	v = e.waitFor(t, again.RunID, activeHook)
	e.call(t, "POST", "/api/hooks/"+v.Hooks[0].HookID+"/resume", `{"by":"ops"}`, 202, nil)
	v = e.waitFor(t, again.RunID, func(v runView) bool { return v.Run.Status.Terminal() })
	if string(v.Run.Output) != `"hello cy, approved by ops"` {
		t.Fatalf("re-run output %s (%s)", v.Run.Output, v.Run.Status)
	}
	// Without RPC the World's endpoints are not mounted.
	e.call(t, "POST", "/v1/workflow/rpc", `{}`, 404, nil)
}

// The page loads its assets relative to where it is mounted.
func TestMountedUnderPrefix(t *testing.T) {
	t.Parallel()
	e := newRemoteEnv(t)
	c := e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Get(e.srv.URL + "/ops")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode/100 != 3 || loc != "/ops/" {
		t.Fatalf("GET /ops: %d Location %q, want a redirect to /ops/", res.StatusCode, loc)
	}
	res, err = c.Get(e.srv.URL + "/ops/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || strings.Contains(string(page), `"/assets/`) || !strings.Contains(string(page), `"assets/app.js"`) {
		t.Fatalf("GET /ops/: %d, want a page with relative asset URLs:\n%s", res.StatusCode, page)
	}
	for _, p := range []string{"/ops/assets/app.js", "/ops/assets/app.css"} {
		res, err := c.Get(e.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || strings.Contains(string(js), `"/api/`) || strings.Contains(string(js), "`/api/") {
			t.Fatalf("%s: status %d or an absolute API path", p, res.StatusCode)
		}
	}
}

// Inputs started from the UI are checked against the workflow's input type and
// the limits before a run exists, and odd paths get JSON.
func TestStartValidatesInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, body := range []string{
		`{"workflow":"devui.Approval","input":{"name":"ada"}}`, // the input is a string
		`{"workflow":"devui.Approval","input":1e999999}`,
		`{"workflow":"devui.Nope","input":"ada"}`, // not one of Options.Runners
	} {
		e.call(t, "POST", "/api/runs", body, 400, nil)
	}
	var runs worlds.Page[worlds.Run]
	e.call(t, "GET", "/api/runs", "", 200, &runs)
	if len(runs.Items) != 0 {
		t.Fatalf("rejected starts created %d runs", len(runs.Items))
	}
	var body struct{ Error, Code string }
	e.call(t, "GET", "/api/runs/x/../../api/runs", "", 404, &body)
	if body.Code != "not_found" {
		t.Fatalf("non-canonical path: %+v", body)
	}
}

// Mounted at an exact pattern, the prefix itself redirects to the page.
func TestPrefixWithoutSlashRedirects(t *testing.T) {
	t.Parallel()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ui, err := workflowui.Handler(w, workflowui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	http.StripPrefix("/ops", ui).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ops?x=1", nil))
	if loc := rec.Header().Get("Location"); rec.Code != http.StatusMovedPermanently || loc != "/ops/?x=1" {
		t.Fatalf("status %d Location %q, want 301 to /ops/?x=1", rec.Code, loc)
	}
}
