package workflowui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowui"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// The handler, its SSE streams, the workers and the browser driver stop with
// their tests; idle keep-alive connections of HTTP clients are pooled, not leaked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

// approval greets, streams a line, and waits for an approver through a hook.
type approval struct{}

func (approval) WorkflowName() string { return "devui.Approval" }

func (approval) Run(ctx workflow.Context, name string) (string, error) {
	state := "greeting"
	if err := workflow.SetQueryHandler(ctx, "state", func(suffix string) (string, error) { return state + suffix, nil }); err != nil {
		return "", err
	}
	greeting, err := workflow.Step(ctx, "greet", func(sctx context.Context, name string) (string, error) {
		return "hello " + name, workflow.WriteStream(sctx, "log", []byte("greeted "+name))
	}, name)
	if err != nil {
		return "", err
	}
	state = "waiting for approval"

	hook, err := workflow.CreateHook[map[string]string](ctx, workflow.HookOptions{Token: "approve-" + name})
	if err != nil {
		return "", err
	}
	got, err := hook.Receive(ctx)
	if err != nil {
		return "", err
	}
	return greeting + ", approved by " + got["by"], nil
}

type env struct {
	srv    *httptest.Server
	world  *local.World
	prefix string // where the UI is mounted
}

func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

// pollingWorld hides the World's StreamNotifier, so stream handlers must poll.
type pollingWorld struct{ worlds.World }

// newEnvWith serves the UI over wrap(world) when wrap is not nil.
func newEnvWith(t *testing.T, wrap func(worlds.World) worlds.World) *env {
	t.Helper()
	return newEnvOpts(t, wrap, nil)
}

// newEnvOpts is newEnvWith with the UI's options changed by opt when it is not nil.
func newEnvOpts(t *testing.T, wrap func(worlds.World) worlds.World, opt func(*workflowui.Options)) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := local.Open(ctx, local.Config{Path: filepath.Join(t.TempDir(), "dev.db"), PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var shown worlds.World = w
	if wrap != nil {
		shown = wrap(w)
	}
	opts := workflowui.Options{Client: client, PollInterval: 20 * time.Millisecond, RPC: true,
		Runners:   workflow.Use(approval{}),
		Workflows: map[string]json.RawMessage{"devui.Approval": json.RawMessage(`"ada"`)}}
	if opt != nil {
		opt(&opts)
	}
	ui, err := workflowui.Handler(shown, opts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- client.Serve(ctx, workflow.Use(approval{})) }()
	srv := httptest.NewServer(ui)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
		w.Close()
	})
	return &env{srv: srv, world: w}
}

func (e *env) call(t *testing.T, method, path, body string, wantStatus int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+e.prefix+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != wantStatus {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, wantStatus, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

type hookView struct {
	worlds.Hook
	TokenHidden bool `json:"tokenHidden"`
}

type runView struct {
	Run      worlds.Run          `json:"run"`
	Steps    []worlds.Step       `json:"steps"`
	Hooks    []hookView          `json:"hooks"`
	Streams  []worlds.StreamInfo `json:"streams"`
	Runnable bool                `json:"runnable"`
	Webhooks bool                `json:"webhooks"`
	Attempts map[string][]struct {
		Attempt int
		Outcome string
		EndedAt *time.Time
	} `json:"attempts"`
}

func (e *env) waitFor(t *testing.T, runID string, cond func(runView) bool) runView {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var v runView
		e.call(t, "GET", "/api/runs/"+runID, "", 200, &v)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never reached the condition; last view %+v", runID, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) start(t *testing.T, input string) string {
	t.Helper()
	var started struct{ RunID string }
	e.call(t, "POST", "/api/runs", `{"workflow":"devui.Approval","input":`+input+`}`, 201, &started)
	if started.RunID == "" {
		t.Fatal("no run ID")
	}
	return started.RunID
}

func activeHook(v runView) bool { return len(v.Hooks) == 1 && v.Hooks[0].Status == worlds.HookActive }

func TestStartResumeComplete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.start(t, `"ada"`)
	// The view reads steps and hooks one after the other, so it may see the hook
	// that the step's completion was written with before it sees the completion.
	v := e.waitFor(t, id, func(v runView) bool {
		return activeHook(v) && len(v.Steps) == 1 && v.Steps[0].Status.Terminal()
	})
	if !v.Runnable || len(v.Steps) != 1 || v.Steps[0].StepName != "greet" || v.Steps[0].Status != worlds.StepCompleted {
		t.Fatalf("view before resume: %+v", v)
	}
	if a := v.Attempts[v.Steps[0].StepID]; len(a) != 1 || a[0].Attempt != 1 || a[0].Outcome != "completed" || a[0].EndedAt == nil {
		t.Fatalf("attempts of the greet step: %+v", a)
	}
	if v.Hooks[0].Token != "" || !v.Hooks[0].TokenHidden {
		t.Fatalf("hook token %q shown (hidden %v) without ShowTokens", v.Hooks[0].Token, v.Hooks[0].TokenHidden)
	}
	e.call(t, "POST", "/api/hooks/"+v.Hooks[0].HookID+"/resume", `{"by":"grace"}`, 202, nil)
	v = e.waitFor(t, id, func(v runView) bool { return v.Run.Status.Terminal() })
	if v.Run.Status != worlds.RunCompleted || string(v.Run.Output) != `"hello ada, approved by grace"` {
		t.Fatalf("finished run: %s %s %v", v.Run.Status, v.Run.Output, v.Run.Error)
	}
	// A disposed hook cannot be resumed again.
	e.call(t, "POST", "/api/hooks/"+v.Hooks[0].HookID+"/resume", `{}`, 410, nil)

	var events worlds.Page[worlds.Event]
	e.call(t, "GET", "/api/runs/"+id+"/events", "", 200, &events)
	if len(events.Items) == 0 || events.Items[0].Type != worlds.EventRunCreated || events.Items[len(events.Items)-1].Type != worlds.EventRunCompleted {
		t.Fatalf("events: %+v", events.Items)
	}
	var runs worlds.Page[worlds.Run]
	e.call(t, "GET", "/api/runs?status=completed", "", 200, &runs)
	if len(runs.Items) != 1 || runs.Items[0].RunID != id {
		t.Fatalf("completed runs: %+v", runs.Items)
	}
}

// readSSE collects "chunk" texts until the "closed" event.
func readSSE(t *testing.T, url string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var texts []string
	event := ""
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			if event == "closed" {
				return texts
			}
		case strings.HasPrefix(line, "data: ") && event == "chunk":
			var c struct{ Text string }
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, c.Text)
		}
	}
	t.Fatalf("stream ended without closed event (err %v), got %q", sc.Err(), texts)
	return nil
}

func TestStreamLiveUntilClosed(t *testing.T) {
	t.Parallel()
	t.Run("notified", func(t *testing.T) { t.Parallel(); testStreamLive(t, newEnv(t)) })
	t.Run("polling", func(t *testing.T) {
		t.Parallel()
		testStreamLive(t, newEnvWith(t, func(w worlds.World) worlds.World { return pollingWorld{w} }))
	})
}

func testStreamLive(t *testing.T, e *env) {
	id := e.start(t, `"lin"`)
	got := make(chan []string, 1)
	// Subscribed before the stream exists: the handler waits for it.
	go func() { got <- readSSE(t, e.srv.URL+"/api/runs/"+id+"/streams/log") }()
	v := e.waitFor(t, id, activeHook)
	e.call(t, "POST", "/api/hooks/"+v.Hooks[0].HookID+"/resume", `{"by":"x"}`, 202, nil)
	select {
	case texts := <-got:
		if len(texts) != 1 || texts[0] != "greeted lin" {
			t.Fatalf("stream chunks %q", texts)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stream never closed")
	}
	// Reading again from the start replays the backlog; from past the end gives nothing.
	if texts := readSSE(t, e.srv.URL+"/api/runs/"+id+"/streams/log"); len(texts) != 1 {
		t.Fatalf("replayed %q", texts)
	}
	if texts := readSSE(t, e.srv.URL+"/api/runs/"+id+"/streams/log?from=1"); len(texts) != 0 {
		t.Fatalf("from=1 gave %q", texts)
	}
	// A stream the finished run never wrote closes at once.
	if texts := readSSE(t, e.srv.URL+"/api/runs/"+id+"/streams/nothing"); len(texts) != 0 {
		t.Fatalf("unwritten stream gave %q", texts)
	}
}

func TestCancelAndRerun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.start(t, `"bob"`)
	e.waitFor(t, id, activeHook)
	e.call(t, "POST", "/api/runs/"+id+"/cancel", `{"reason":"changed my mind"}`, 200, nil)
	v := e.waitFor(t, id, func(v runView) bool { return v.Run.Status.Terminal() })
	if v.Run.Status != worlds.RunCancelled {
		t.Fatalf("status %s", v.Run.Status)
	}
	e.call(t, "POST", "/api/runs/"+id+"/cancel", ``, 410, nil)

	var again struct{ RunID string }
	e.call(t, "POST", "/api/runs/"+id+"/rerun", "", 201, &again)
	if again.RunID == "" || again.RunID == id {
		t.Fatalf("rerun ID %q", again.RunID)
	}
	v = e.waitFor(t, again.RunID, activeHook)
	if string(v.Run.Input) != `"bob"` || v.Run.Attributes["rerun_of"] != id {
		t.Fatalf("rerun input %s attributes %v", v.Run.Input, v.Run.Attributes)
	}
	// The World's own webhook endpoint resumes it too.
	e.call(t, "POST", "/v1/workflow/webhooks/approve-bob", `{"by":"webhook"}`, 202, nil)
	v = e.waitFor(t, again.RunID, func(v runView) bool { return v.Run.Status.Terminal() })
	if string(v.Run.Output) != `"hello bob, approved by webhook"` {
		t.Fatalf("output %s", v.Run.Output)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/api/runs/nope", "", 404},
		{"GET", "/api/runs/nope/events", "", 404},
		{"GET", "/api/runs/nope/streams/log", "", 404},
		{"POST", "/api/runs/nope/cancel", "", 404},
		{"POST", "/api/runs/nope/rerun", "", 404},
		{"POST", "/api/hooks/nope/resume", "{}", 404},
		{"GET", "/api/runs?status=stuck", "", 400},
		{"GET", "/api/runs?limit=-1", "", 400},
		{"GET", "/api/runs?cursor=garbage!", "", 400},
		{"GET", "/api/runs?attr=novalue", "", 400},
		{"GET", "/api/runs?attr=a=1&attr=a=2", "", 400},
		{"GET", "/api/runs?attr=%01=1", "", 400},
		{"POST", "/api/runs", "{not json", 400},
		{"POST", "/api/runs", `{"workflow":""}`, 400},
		{"POST", "/api/runs", `{"workflow":"x","input":1,"extra":true}`, 400},
		{"GET", "/api/nothing", "", 404},
		{"POST", "/v1/workflow/webhooks/unknown-token", "{}", 404},
	} {
		var body struct {
			Error any `json:"error"`
		}
		e.call(t, tc.method, tc.path, tc.body, tc.status, &body)
		if body.Error == nil || body.Error == "" {
			t.Errorf("%s %s: no error message", tc.method, tc.path)
		}
	}
	// A cross-origin form post (no JSON content type) changes nothing.
	res, err := http.Post(e.srv.URL+"/api/runs", "text/plain", strings.NewReader(`{"workflow":"devui.Approval","input":"mallory"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain POST: status %d, want 415", res.StatusCode)
	}
	var runs worlds.Page[worlds.Run]
	e.call(t, "GET", "/api/runs", "", 200, &runs)
	if len(runs.Items) != 0 {
		t.Fatalf("a text/plain POST started %d runs", len(runs.Items))
	}
	id := e.start(t, `"eve"`)
	v := e.waitFor(t, id, activeHook)
	e.call(t, "POST", "/api/hooks/"+v.Hooks[0].HookID+"/resume", `{"by":`, 400, nil)
}

func TestAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/", "/assets/app.js", "/assets/app.css"} {
		res, err := http.Get(e.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || len(b) == 0 {
			t.Fatalf("GET %s: %d, %d bytes", p, res.StatusCode, len(b))
		}
	}
	var workflows struct {
		Workflows []struct {
			Name    string
			Example json.RawMessage
		}
	}
	e.call(t, "GET", "/api/workflows", "", 200, &workflows)
	if len(workflows.Workflows) != 1 || workflows.Workflows[0].Name != "devui.Approval" || string(workflows.Workflows[0].Example) != `"ada"` {
		t.Fatalf("workflows %+v", workflows)
	}
	total := 0
	if err := fs.WalkDir(workflowui.Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(workflowui.Assets(), path)
		total += len(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if total == 0 || total > 60<<10 {
		t.Fatalf("assets are %d bytes, want 1..60 KiB", total)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	client, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflowui.Handler(nil, workflowui.Options{}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("Handler(nil World) = %v, want ErrInvalidArgument", err)
	}
	if _, err := workflowui.ClientHandler(nil, workflowui.Options{}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("ClientHandler(nil) = %v, want ErrInvalidArgument", err)
	}
	if _, err := workflowui.ClientHandler(client, workflowui.Options{PollInterval: -1}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("negative PollInterval = %v, want ErrInvalidArgument", err)
	}
}

// GET /api/runs?attr=KEY=VALUE (repeatable) lists the runs holding every pair.
func TestListRunsByAttributes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for id, attrs := range map[string]map[string]string{
		"gold-a": {"tier": "gold", "team": "a"}, "gold-b": {"tier": "gold", "team": "b"}, "silver-a": {"tier": "silver", "team": "a"},
	} {
		if _, err := e.world.Append(context.Background(), id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "reports.Build", Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	for query, want := range map[string]string{
		"attr=tier=gold":               "gold-a,gold-b",
		"attr=tier=gold&attr=team=a":   "gold-a",
		"attr=team=a&attr=tier=bronze": "",
	} {
		var runs worlds.Page[worlds.Run]
		e.call(t, "GET", "/api/runs?"+query, "", 200, &runs)
		var ids []string
		for _, r := range runs.Items {
			ids = append(ids, r.RunID)
		}
		slices.Sort(ids)
		if got := strings.Join(ids, ","); got != want {
			t.Errorf("GET /api/runs?%s = %s, want %s", query, got, want)
		}
	}
}

// POST /api/runs/{id}/query answers with the run's query handler and writes
// nothing; an unknown handler is 404, a bad argument 400, an unknown run 404.
func TestQueryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var started struct{ RunID string }
	e.call(t, "POST", "/api/runs", `{"workflow":"devui.Approval","input":"query"}`, 201, &started)
	e.waitFor(t, started.RunID, func(v runView) bool { return len(v.Hooks) == 1 })
	// The run view reads the run and its hooks separately, so the log is
	// counted from the World once the hook (the last event before the run
	// parks) is visible.
	before := e.eventCount(t, started.RunID)
	var res struct{ Result string }
	e.call(t, "POST", "/api/runs/"+started.RunID+"/query", `{"name":"state","arg":"!"}`, 200, &res)
	if res.Result != "waiting for approval!" {
		t.Fatalf("query state = %q", res.Result)
	}
	e.call(t, "POST", "/api/runs/"+started.RunID+"/query", `{"name":"nope"}`, 404, nil)
	e.call(t, "POST", "/api/runs/"+started.RunID+"/query", `{"name":"state","arg":1}`, 400, nil)
	e.call(t, "POST", "/api/runs/missing/query", `{"name":"state"}`, 404, nil)
	if after := e.eventCount(t, started.RunID); after != before {
		t.Fatalf("queries changed the log: %d events, then %d", before, after)
	}
}

func (e *env) eventCount(t *testing.T, runID string) int {
	t.Helper()
	page, err := e.world.ListEvents(context.Background(), runID, worlds.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Cursor != "" {
		t.Fatalf("run %s: more than one page of events", runID)
	}
	return len(page.Items)
}
