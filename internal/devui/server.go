package devui

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
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

//go:embed assets
var assets embed.FS

// maxBody bounds request bodies of the UI's API (inputs and hook payloads).
const maxBody = 1 << 20

// Config configures a [Server].
type Config struct {
	// World is the World the UI shows and acts on. Required.
	World worlds.World
	// Client is the workflow runtime client used to cancel runs. Required.
	Client *workflow.Client
	// Workflows are the workflow names the UI offers to start, with an example
	// input each (nil for none). Runs of other workflows are still listed.
	Workflows map[string]json.RawMessage
	// PollInterval is how often a live stream is re-read when the World cannot push
	// writes ([worlds.StreamNotifier]); zero uses 500ms.
	PollInterval time.Duration
	// NewRunID generates IDs for runs started from the UI; nil uses random IDs.
	NewRunID func() string
	// Logger receives request errors; nil discards them.
	Logger *slog.Logger
}

// Server is the dev server's HTTP handler.
type Server struct {
	cfg Config
	mux *http.ServeMux
}

// New validates cfg and returns the handler. It does not contact the World.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.World == nil:
		return nil, &worlds.ArgumentError{Field: "devui.Config.World", Value: nil, Reason: "required"}
	case cfg.Client == nil:
		return nil, &worlds.ArgumentError{Field: "devui.Config.Client", Value: nil, Reason: "required"}
	case cfg.PollInterval < 0:
		return nil, &worlds.ArgumentError{Field: "devui.Config.PollInterval", Value: cfg.PollInterval, Reason: "must not be negative"}
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 500 * time.Millisecond
	}
	if cfg.NewRunID == nil {
		cfg.NewRunID = randomRunID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	files := http.FileServerFS(Assets())
	s.mux.Handle("GET /{$}", files)
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	s.mux.HandleFunc("GET /api/workflows", s.workflows)
	s.mux.HandleFunc("GET /api/runs", s.listRuns)
	s.mux.HandleFunc("POST /api/runs", s.startRun)
	s.mux.HandleFunc("GET /api/runs/{id}", s.runDetail)
	s.mux.HandleFunc("GET /api/runs/{id}/events", s.runEvents)
	s.mux.HandleFunc("POST /api/runs/{id}/cancel", s.cancelRun)
	s.mux.HandleFunc("POST /api/runs/{id}/rerun", s.rerun)
	s.mux.HandleFunc("GET /api/runs/{id}/streams/{name}", s.followStream)
	s.mux.HandleFunc("POST /api/hooks/{id}/resume", s.resumeHook)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s", r.Method, r.URL.Path))
	})
	s.mux.Handle(worldhttp.DefaultPrefix+"/", worldhttp.Handler(cfg.World, worldhttp.Options{NewRunID: cfg.NewRunID}))
	return s, nil
}

// ServeHTTP implements http.Handler. Writes to the UI's API must be JSON: a page
// on another origin cannot send that content type without a CORS preflight, which
// this server never grants, so it cannot start, cancel or resume anything.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && strings.HasPrefix(r.URL.Path, "/api/") {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, errors.New("requests that change state need Content-Type: application/json"))
			return
		}
	}
	s.mux.ServeHTTP(w, r)
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
	case http.StatusNotFound:
		code = "not_found"
	case http.StatusRequestEntityTooLarge:
		code = "too_large"
	case http.StatusUnsupportedMediaType:
		code = "unsupported_media_type"
	default:
		code = "internal"
	}
	writeJSON(w, status, errorBody{Error: err.Error(), Code: code})
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := worldhttp.StatusOf(err)
	if status >= 500 && !errors.Is(err, context.Canceled) {
		s.cfg.Logger.Error("devui: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, 0, err)
}

type workflowInfo struct {
	Name    string          `json:"name"`
	Example json.RawMessage `json:"example,omitempty"`
}

func (s *Server) workflows(w http.ResponseWriter, r *http.Request) {
	out := []workflowInfo{}
	for name, ex := range s.cfg.Workflows {
		out = append(out, workflowInfo{Name: name, Example: ex})
	}
	sortBy(out, func(a workflowInfo) string { return a.Name })
	writeJSON(w, http.StatusOK, map[string]any{"workflows": out})
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
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
	page, err := s.cfg.World.ListRuns(r.Context(), f)
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

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
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

// start creates a run and queues its first delivery, the same two writes
// workflow.Start makes, for a workflow known only by name.
func (s *Server) start(ctx context.Context, name string, input json.RawMessage, attrs map[string]string) (string, error) {
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if !json.Valid(input) {
		return "", &worlds.ArgumentError{Field: "input", Value: len(input), Reason: "not valid JSON"}
	}
	id := s.cfg.NewRunID()
	if _, err := s.cfg.World.Append(ctx, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: name, Input: input, Attributes: attrs}); err != nil {
		return "", err
	}
	if _, err := s.cfg.World.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: name, RunID: id},
		worlds.QueueOptions{ID: "start-" + id}); err != nil {
		return id, fmt.Errorf("run %s created but its first delivery was not queued: %w", id, err)
	}
	return id, nil
}

// runView is the body of GET /api/runs/{id}.
type runView struct {
	Run     worlds.Run          `json:"run"`
	Steps   []worlds.Step       `json:"steps"`
	Hooks   []worlds.Hook       `json:"hooks"`
	Streams []worlds.StreamInfo `json:"streams"`
	// Attempts lists each step's attempts by step ID, read from the log, so the
	// timeline shows the errors of attempts that were retried.
	Attempts map[string][]attempt `json:"attempts"`
	// Waits are the run's durable timers, read from the log.
	Waits []wait `json:"waits"`
	// Runnable reports that this server has a runner for the run's workflow, so re-run works.
	Runnable bool `json:"runnable"`
	// Links are the run's parent and children and its continue-as-new neighbours.
	Links workflow.RunLinks `json:"links"`
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

func (s *Server) runDetail(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	run, err := s.cfg.World.GetRun(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := runView{Run: run, Steps: []worlds.Step{}, Hooks: []worlds.Hook{}, Streams: []worlds.StreamInfo{}}
	_, v.Runnable = s.cfg.Workflows[run.WorkflowName]
	for f := (worlds.ListFilter{Limit: worlds.MaxPageSize}); ; {
		p, err := s.cfg.World.ListSteps(ctx, id, f)
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
		p, err := s.cfg.World.ListHooks(ctx, f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v.Hooks = append(v.Hooks, p.Items...)
		if f.Cursor = p.Cursor; f.Cursor == "" {
			break
		}
	}
	events, err := worlds.AllEvents(ctx, s.cfg.World, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.Attempts, v.Waits = history(events)
	v.Links = workflow.Links(run, v.Steps)
	if v.Streams, err = s.cfg.World.ListStreams(ctx, id); err != nil {
		s.fail(w, r, err)
		return
	}
	if v.Streams == nil {
		v.Streams = []worlds.StreamInfo{}
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	evs, err := worlds.AllEvents(r.Context(), s.cfg.World, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if evs == nil {
		evs = []worlds.Event{}
	}
	writeJSON(w, http.StatusOK, worlds.Page[worlds.Event]{Items: evs})
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decodeBody(w, r, &req); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if req.Reason == "" {
		req.Reason = "cancelled from cairn dev"
	}
	if err := s.cfg.Client.Cancel(r.Context(), r.PathValue("id"), req.Reason); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) rerun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run, err := s.cfg.World.GetRun(ctx, r.PathValue("id"))
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

func (s *Server) resumeHook(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, err)
		return
	}
	if len(body) > 0 && !json.Valid(body) {
		writeError(w, http.StatusBadRequest, errors.New("payload is not valid JSON"))
		return
	}
	hook, err := s.cfg.World.GetHook(ctx, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if hook.Status != worlds.HookActive {
		writeError(w, 0, fmt.Errorf("hook %s is %s: %w", hook.HookID, hook.Status, worlds.ErrHookDisposed))
		return
	}
	rc, err := worlds.ResumeHook(ctx, s.cfg.World, hook.Token, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, rc)
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
