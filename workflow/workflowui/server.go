package workflowui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-go/cairn/internal/httpguard"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

//go:embed assets
var assets embed.FS

// maxBody bounds request bodies of the UI's API (inputs and hook payloads).
const maxBody = worlds.MaxInputBytes + 4<<10

// Options configure the UI. The zero value is usable.
type Options struct {
	// Workflows are the workflow names the UI offers to start, with an example
	// input each (nil for none). Empty offers the workflows of Runners. Runs of
	// other workflows are listed either way.
	Workflows map[string]json.RawMessage
	// Runners, when set, are the workflows of this process: runs started or re-run
	// from the UI must be of one of them, and their inputs are checked against
	// the workflow's input type ([worlds.InputValidator]) before anything is
	// written. The UI never runs them; a worker does. Leave it nil when the
	// runners live in other processes (a Lambda worker of the AWS World): starts
	// and re-runs are then queued for whichever worker serves the workflow.
	Runners worlds.Runner
	// Client, when set, cancels runs through the workflow runtime, so its
	// Observer sees the cancellation; otherwise the UI cancels through the World
	// the same way. [ClientHandler] sets it.
	Client *workflow.Client
	// RPC also mounts the World's RPC and webhook endpoints (package worldhttp)
	// under /v1/workflow, relative to where the UI is mounted.
	RPC bool
	// PollInterval is how often a live stream is re-read when the World cannot push
	// writes ([worlds.StreamNotifier]); zero uses 500ms.
	PollInterval time.Duration
	// NewRunID generates IDs for runs started from the UI; nil uses random IDs.
	NewRunID func() string
	// Logger receives request errors; nil discards them.
	Logger *slog.Logger
	// TrustedOrigins are origins (scheme://host[:port]) whose pages may change
	// state through the UI's API and the RPC endpoint from a browser. Pages of
	// every other origin are refused with 403; the UI's own page is same-origin.
	TrustedOrigins []string
	// ShowTokens shows hook tokens, which resume their hooks, in the run view,
	// its events and the RPC's hook views. By default they are hidden: the UI
	// resumes hooks by their ID, and anyone who can reach an unauthenticated
	// UI could otherwise read every token.
	ShowTokens bool
}

// ui is the handler Handler returns.
type ui struct {
	world  worlds.World
	opts   Options
	mux    *http.ServeMux
	guard  *httpguard.Writes
	assets fs.FS
}

// ClientHandler is [Handler] over the client's World, cancelling runs through the client.
func ClientHandler(c *workflow.Client, opts Options) (http.Handler, error) {
	if c == nil {
		return nil, &worlds.ArgumentError{Field: "workflowui: client", Value: nil, Reason: "required"}
	}
	opts.Client = c
	return Handler(c.World(), opts)
}

// Handler returns the web UI and its JSON API over w, to mount in your own
// server, for example under a prefix:
//
//	mux.Handle("/workflows/", http.StripPrefix("/workflows", ui))
//
// Its pages use relative URLs, so any prefix works when the UI's root is
// requested with its trailing slash. It validates opts and does not contact the
// World. It has no authentication: mount it behind your own.
func Handler(w worlds.World, opts Options) (http.Handler, error) {
	switch {
	case w == nil:
		return nil, &worlds.ArgumentError{Field: "workflowui: World", Value: nil, Reason: "required"}
	case opts.PollInterval < 0:
		return nil, &worlds.ArgumentError{Field: "workflowui: Options.PollInterval", Value: opts.PollInterval, Reason: "must not be negative"}
	}
	guard, err := httpguard.NewWrites(opts.TrustedOrigins)
	if err != nil {
		var oe *httpguard.OriginError
		errors.As(err, &oe)
		return nil, &worlds.ArgumentError{Field: "workflowui: Options.TrustedOrigins", Value: oe.Value, Reason: err.Error()}
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.NewRunID == nil {
		opts.NewRunID = randomRunID
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if len(opts.Workflows) == 0 && opts.Runners != nil {
		opts.Workflows = map[string]json.RawMessage{}
		for _, name := range opts.Runners.Workflows() {
			opts.Workflows[name] = nil
		}
	}
	s := &ui{world: w, opts: opts, mux: http.NewServeMux(), guard: guard, assets: Assets()}
	files := http.FileServerFS(s.assets)
	s.mux.Handle("GET /{$}", files)
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", s.onlyAssets(files)))
	s.mux.HandleFunc("GET /api/workflows", s.workflows)
	s.mux.HandleFunc("GET /api/runs", s.listRuns)
	s.mux.HandleFunc("POST /api/runs", s.startRun)
	s.mux.HandleFunc("GET /api/runs/{id}", s.runDetail)
	s.mux.HandleFunc("GET /api/runs/{id}/events", s.runEvents)
	s.mux.HandleFunc("POST /api/runs/{id}/cancel", s.cancelRun)
	s.mux.HandleFunc("POST /api/runs/{id}/rerun", s.rerun)
	s.mux.HandleFunc("POST /api/runs/{id}/signal", s.signalRun)
	s.mux.HandleFunc("POST /api/runs/{id}/query", s.queryRun)
	s.mux.HandleFunc("GET /api/runs/{id}/streams/{name}", s.followStream)
	s.mux.HandleFunc("POST /api/hooks/{id}/resume", s.resumeHook)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s", r.Method, r.URL.Path))
	})
	if opts.RPC {
		s.mux.Handle(worldhttp.DefaultPrefix+"/", worldhttp.Handler(w, worldhttp.Options{NewRunID: opts.NewRunID, Workflows: opts.Runners,
			TrustedOrigins: opts.TrustedOrigins, ShowTokens: opts.ShowTokens}))
	}
	return s, nil
}

// ServeHTTP implements http.Handler. Writes to the UI's API must be JSON and
// must not come from a page of another origin (Sec-Fetch-Site, Origin): a page
// open in the same browser cannot start, cancel or resume anything.
func (s *ui) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "" { // mounted with http.StripPrefix and asked for the prefix itself
		to := "/"
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			u.Path += "/"
			to = u.String()
		}
		http.Redirect(w, r, to, http.StatusMovedPermanently)
		return
	}
	if !worldhttp.CanonicalPath(r.URL.Path) {
		// http.ServeMux would redirect with an HTML body; API clients want JSON.
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		if err := s.guard.Check(r); err != nil {
			var ref *httpguard.Refusal
			errors.As(err, &ref)
			writeError(w, ref.Status, err)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// onlyAssets answers 404 for a path that names no embedded file, before the
// file server sees it: an invalid name (bytes that are not UTF-8, a NUL) would
// otherwise fail to open with an error the file server answers 500.
func (s *ui) onlyAssets(files http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "."
		}
		if !fs.ValidPath(name) || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
			http.NotFound(w, r)
			return
		}
		if _, err := fs.Stat(s.assets, name); err != nil {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

func randomRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody is the JSON of every API error.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	var code string
	switch status {
	case 0:
		status, code = worldhttp.StatusOf(err)
	case http.StatusBadRequest:
		code = "invalid_argument"
	case http.StatusForbidden:
		code = "forbidden"
	case http.StatusNotFound:
		code = "not_found"
	case http.StatusRequestTimeout:
		code = "timeout"
	case http.StatusRequestEntityTooLarge:
		code = "too_large"
	case http.StatusUnsupportedMediaType:
		code = "unsupported_media_type"
	default:
		code = "internal"
	}
	writeJSON(w, status, errorBody{Error: err.Error(), Code: code})
}

func (s *ui) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := worldhttp.StatusOf(err)
	if status >= 500 && !errors.Is(err, context.Canceled) {
		s.opts.Logger.Error("workflowui: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, 0, err)
}

type workflowInfo struct {
	Name    string          `json:"name"`
	Example json.RawMessage `json:"example,omitempty"`
}

func (s *ui) workflows(w http.ResponseWriter, r *http.Request) {
	out := []workflowInfo{}
	for name, ex := range s.opts.Workflows {
		out = append(out, workflowInfo{Name: name, Example: ex})
	}
	sortBy(out, func(a workflowInfo) string { return a.Name })
	writeJSON(w, http.StatusOK, map[string]any{"workflows": out})
}

func (s *ui) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := worlds.RunFilter{WorkflowName: q.Get("workflow"), Status: worlds.RunStatus(q.Get("status")), Cursor: q.Get("cursor")}
	if f.Status != "" && !f.Status.Valid() {
		writeError(w, http.StatusBadRequest, fmt.Errorf("unknown status %q", f.Status))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit %q: want a non-negative number", v))
			return
		}
		f.Limit = n
	}
	// attr=KEY=VALUE, repeated: runs holding every pair.
	for _, pair := range q["attr"] {
		k, v, err := worlds.ParseAttributePair(pair)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if f.Attributes == nil {
			f.Attributes = map[string]string{}
		}
		if old, dup := f.Attributes[k]; dup && old != v {
			writeError(w, http.StatusBadRequest, fmt.Errorf("attribute %s given twice, as %q and %q", k, old, v))
			return
		}
		f.Attributes[k] = v
	}
	page, err := s.world.ListRuns(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if page.Items == nil {
		page.Items = []worlds.Run{}
	}
	writeJSON(w, http.StatusOK, page)
}

// startRequest is the body of POST /api/runs.
type startRequest struct {
	Workflow string          `json:"workflow"`
	Input    json.RawMessage `json:"input"`
}

func (s *ui) startRun(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, bodyStatus(err), err)
		return
	}
	if req.Workflow == "" {
		writeError(w, http.StatusBadRequest, errors.New("workflow is required"))
		return
	}
	id, err := s.start(r.Context(), req.Workflow, req.Input, nil)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"runId": id})
}

// start creates a run and queues its first delivery, as workflow.Start does,
// for a workflow known only by name.
func (s *ui) start(ctx context.Context, name string, input json.RawMessage, attrs map[string]string) (string, error) {
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if err := worlds.ValidateStart(s.opts.Runners, name, "", input, attrs); err != nil {
		return "", err
	}
	id := s.opts.NewRunID()
	if _, err := worlds.StartRun(ctx, s.world, id, name, input, attrs); err != nil {
		return "", err
	}
	return id, nil
}

// runView is the body of GET /api/runs/{id}.
type runView struct {
	Run     worlds.Run          `json:"run"`
	Steps   []worlds.Step       `json:"steps"`
	Hooks   []hookView          `json:"hooks"`
	Streams []worlds.StreamInfo `json:"streams"`
	// Attempts lists each step's attempts by step ID, read from the log, so the
	// timeline shows the errors of attempts that were retried.
	Attempts map[string][]attempt `json:"attempts"`
	// Waits are the run's durable timers, read from the log.
	Waits []wait `json:"waits"`
	// Runnable reports that a re-run can be started: the workflow is one of
	// Options.Runners, or the runners live elsewhere (Runners unset).
	Runnable bool `json:"runnable"`
	// Webhooks reports that the webhook endpoint is mounted next to the UI.
	Webhooks bool `json:"webhooks"`
	// Links are the run's parent and children and its continue-as-new neighbours.
	Links workflow.RunLinks `json:"links"`
}

// hookView is a hook of the run view, its token left out unless
// Options.ShowTokens is set.
type hookView struct {
	worlds.Hook
	TokenHidden bool `json:"tokenHidden,omitempty"`
}

// attempt is one attempt of a step.
type attempt struct {
	Attempt   int               `json:"attempt"`
	StartedAt time.Time         `json:"startedAt"`
	EndedAt   *time.Time        `json:"endedAt,omitempty"`
	Outcome   string            `json:"outcome"` // running, completed, retrying or failed
	Error     *worlds.ErrorInfo `json:"error,omitempty"`
}

// wait is one durable timer of a run.
type wait struct {
	WaitID      string     `json:"waitId"`
	CreatedAt   time.Time  `json:"createdAt"`
	ResumeAt    time.Time  `json:"resumeAt"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
}

// history derives step attempts and waits from a run's log.
func history(events []worlds.Event) (map[string][]attempt, []wait) {
	attempts := map[string][]attempt{}
	waits := []wait{}
	waitIdx := map[string]int{}
	for _, ev := range events {
		at := ev.CreatedAt
		switch ev.Type {
		case worlds.EventStepStarted:
			attempts[ev.CorrelationID] = append(attempts[ev.CorrelationID], attempt{Attempt: ev.Attempt, StartedAt: at, Outcome: "running"})
		case worlds.EventStepCompleted, worlds.EventStepRetrying, worlds.EventStepFailed:
			list := attempts[ev.CorrelationID]
			if len(list) == 0 {
				continue
			}
			last := &list[len(list)-1]
			last.EndedAt, last.Error = &at, ev.Error
			last.Outcome = map[worlds.EventType]string{worlds.EventStepCompleted: "completed", worlds.EventStepRetrying: "retrying", worlds.EventStepFailed: "failed"}[ev.Type]
		case worlds.EventWaitCreated:
			if ev.ResumeAt != nil {
				waitIdx[ev.CorrelationID] = len(waits)
				waits = append(waits, wait{WaitID: ev.CorrelationID, CreatedAt: at, ResumeAt: *ev.ResumeAt})
			}
		case worlds.EventWaitCompleted:
			if i, ok := waitIdx[ev.CorrelationID]; ok {
				waits[i].CompletedAt = &at
			}
		}
	}
	return attempts, waits
}

func (s *ui) runDetail(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	run, err := s.world.GetRun(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := runView{Run: run, Steps: []worlds.Step{}, Hooks: []hookView{}, Streams: []worlds.StreamInfo{}}
	v.Runnable, v.Webhooks = s.runnable(run.WorkflowName), s.opts.RPC
	for f := (worlds.ListFilter{Limit: worlds.MaxPageSize}); ; {
		p, err := s.world.ListSteps(ctx, id, f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v.Steps = append(v.Steps, p.Items...)
		if f.Cursor = p.Cursor; f.Cursor == "" {
			break
		}
	}
	for f := (worlds.HookFilter{RunID: id, Limit: worlds.MaxPageSize}); ; {
		p, err := s.world.ListHooks(ctx, f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, hk := range p.Items {
			hv := hookView{Hook: hk}
			if !s.opts.ShowTokens {
				hv.Token, hv.TokenHidden = "", true
			}
			v.Hooks = append(v.Hooks, hv)
		}
		if f.Cursor = p.Cursor; f.Cursor == "" {
			break
		}
	}
	events, err := worlds.AllEvents(ctx, s.world, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Attempts, v.Waits = history(events)
	v.Links = workflow.Links(run, v.Steps)
	if v.Streams, err = s.world.ListStreams(ctx, id); err != nil {
		s.fail(w, r, err)
		return
	}
	if v.Streams == nil {
		v.Streams = []worlds.StreamInfo{}
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *ui) runEvents(w http.ResponseWriter, r *http.Request) {
	evs, err := worlds.AllEvents(r.Context(), s.world, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []worlds.Event{}
	}
	if !s.opts.ShowTokens {
		worldhttp.HideTokens(evs)
	}
	writeJSON(w, http.StatusOK, worlds.Page[worlds.Event]{Items: evs})
}

func (s *ui) cancelRun(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decodeBody(w, r, &req); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, bodyStatus(err), err)
		return
	}
	if req.Reason == "" {
		req.Reason = "cancelled from the web UI"
	}
	if err := worlds.ValidateReason(req.Reason); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.cancel(r.Context(), r.PathValue("id"), req.Reason); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// queryRequest is the body of POST /api/runs/{id}/query.
type queryRequest struct {
	Name string          `json:"name"`
	Arg  json.RawMessage `json:"arg"`
}

// queryRun answers a query of the run with its code: through the client
// (whose run cache may hold the run) when it knows the workflow, else with
// Options.Runners. It writes nothing to the World.
func (s *ui) queryRun(w http.ResponseWriter, r *http.Request) {
	var req queryRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, bodyStatus(err), err)
		return
	}
	id := r.PathValue("id")
	var out json.RawMessage
	err := worlds.ErrNoRunner
	if s.opts.Client != nil {
		out, err = workflow.Query[json.RawMessage](r.Context(), s.opts.Client, id, req.Name, req.Arg)
	}
	if errors.Is(err, worlds.ErrNoRunner) && s.opts.Runners != nil {
		out, err = worlds.QueryRun(r.Context(), s.world, s.opts.Runners, id, req.Name, req.Arg)
	}
	if errors.Is(err, worlds.ErrNoRunner) && !errors.Is(err, worlds.ErrInvalidArgument) {
		err = fmt.Errorf("%w: queries run the workflow's code, and this UI has none for this run (set Options.Runners)", err)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]json.RawMessage{"result": out})
}

// runnable reports whether runs of the workflow can be started from here.
func (s *ui) runnable(name string) bool {
	if s.opts.Runners == nil {
		return true
	}
	return slices.Contains(s.opts.Runners.Workflows(), name)
}

// cancel cancels a run: through the client when there is one, else as the RPC
// does ([worlds.RequestCancel]), which wakes the run's worker, wherever it runs,
// to hand the cancellation to the run's code.
func (s *ui) cancel(ctx context.Context, runID, reason string) error {
	if s.opts.Client != nil {
		return s.opts.Client.Cancel(ctx, runID, reason)
	}
	_, err := worlds.RequestCancel(ctx, s.world, runID, reason)
	return err
}

func (s *ui) rerun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run, err := s.world.GetRun(ctx, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := s.start(ctx, run.WorkflowName, run.Input, map[string]string{"rerun_of": run.RunID})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"runId": id})
}

// signalRun sends the run a signal: {"name": "...", "payload": any JSON}.
func (s *ui) signalRun(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name    string          `json:"name"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, bodyStatus(err), err)
		return
	}
	if err := worlds.SendSignal(r.Context(), s.world, r.PathValue("id"), req.Name, req.Payload); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}

func (s *ui) resumeHook(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, bodyStatus(err), err)
		return
	}
	if err := worlds.ValidateJSON("payload", body); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	hook, err := s.world.GetHook(ctx, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if hook.Status != worlds.HookActive {
		writeError(w, 0, fmt.Errorf("hook %s is %s: %w", hook.HookID, hook.Status, worlds.ErrHookDisposed))
		return
	}
	rc, err := worlds.ResumeHook(ctx, s.world, hook.Token, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, rc)
}

// bodyStatus is the status of a request whose body could not be read or
// decoded: 413 when too large, 408 when it did not arrive before the server's
// ReadTimeout, 400 otherwise.
func bodyStatus(err error) int {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return err
		}
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

// Assets returns the embedded web UI files (index.html, app.js, app.css).
func Assets() fs.FS {
	sub, _ := fs.Sub(assets, "assets")
	return sub
}
