package worldhttp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cairn-go/cairn/internal/httpguard"
	"github.com/cairn-go/cairn/worlds"
)

// DefaultPrefix is where the endpoints live unless Options.Prefix says otherwise.
const DefaultPrefix = "/v1/workflow"

// DefaultMaxBodyBytes bounds request bodies: DynamoDB items are 400 KB at most.
const DefaultMaxBodyBytes = 256 << 10

// Options configure the handlers. The zero value is usable.
type Options struct {
	// Prefix the routes are served under; empty uses [DefaultPrefix].
	Prefix string
	// MaxBodyBytes bounds request bodies; zero uses [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// NewRunID generates IDs for runs.start without runId; nil uses random IDs.
	NewRunID func() string
	// Workflows, when set, are the workflows runs.start may start: another name
	// is rejected, and a runner implementing [worlds.InputValidator] (workflow.Use
	// does) checks the input's shape before run_created is written. They also
	// answer runs.query, when they implement [worlds.Querier] (workflow.Use
	// does): the handler replays the run's log with their code, writing
	// nothing. It never runs their deliveries.
	Workflows worlds.Runner
	// TrustedOrigins are origins (scheme://host[:port]) whose pages may call
	// the RPC endpoint from a browser. Pages of every other origin are refused
	// with 403, so a page open in a browser on the machine cannot start or
	// cancel runs. A malformed entry is reported by [Options.Validate]; the
	// handlers then answer every RPC call 500 rather than guess.
	TrustedOrigins []string
	// ShowTokens lists hook tokens, and the webhook URLs that contain them, in
	// hooks.list, hooks.get and events.list. By default they are left out
	// (tokenHidden is set instead): a token is the secret that resumes its hook,
	// and anyone who can reach an unauthenticated server could read them all.
	// Set it where the RPC endpoint is behind authentication, as the AWS
	// World's is behind IAM. hooks.resume and webhooks take tokens either way.
	ShowTokens bool
}

// Validate reports options the handlers cannot serve with: a malformed
// TrustedOrigins entry, as an *worlds.ArgumentError naming it.
func (o Options) Validate() error {
	if _, err := httpguard.NewWrites(o.TrustedOrigins); err != nil {
		var oe *httpguard.OriginError
		errors.As(err, &oe)
		return &worlds.ArgumentError{Field: "worldhttp: Options.TrustedOrigins", Value: oe.Value, Reason: err.Error()}
	}
	return nil
}

func (o Options) withDefaults() Options {
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.NewRunID == nil {
		o.NewRunID = func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			return "run_" + hex.EncodeToString(b[:])
		}
	}
	return o
}

func newRPC(w worlds.World, o Options) *rpcHandler {
	h := &rpcHandler{w: w, o: o}
	h.guard, h.guardErr = httpguard.NewWrites(o.TrustedOrigins)
	if h.guardErr != nil {
		h.guardErr = o.Validate()
	}
	return h
}

// Handler serves both the RPC and the webhook endpoints.
func Handler(w worlds.World, opts Options) http.Handler {
	opts = opts.withDefaults()
	mux := http.NewServeMux()
	rpc, hook := newRPC(w, opts), &webhookHandler{w: w, o: opts}
	mux.Handle(opts.Prefix+"/rpc", rpc)
	mux.Handle(opts.Prefix+"/webhooks/{token}", hook)
	mux.HandleFunc("/", notFound)
	return exactPaths(mux)
}

// RPC serves only {prefix}/rpc.
func RPC(w worlds.World, opts Options) http.Handler {
	opts = opts.withDefaults()
	mux := http.NewServeMux()
	mux.Handle(opts.Prefix+"/rpc", newRPC(w, opts))
	mux.HandleFunc("/", notFound)
	return exactPaths(mux)
}

// Webhook serves only {prefix}/webhooks/{token}, the route that may be public.
func Webhook(w worlds.World, opts Options) http.Handler {
	opts = opts.withDefaults()
	mux := http.NewServeMux()
	mux.Handle(opts.Prefix+"/webhooks/{token}", &webhookHandler{w: w, o: opts})
	mux.HandleFunc("/", notFound)
	return exactPaths(mux)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "not_found", "no route "+r.URL.Path)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

// StatusOf maps a World error to an HTTP status and error code.
func StatusOf(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, worlds.ErrInvalidArgument), errors.Is(err, worlds.ErrEventInvalid):
		return http.StatusBadRequest, "invalid_argument"
	case errors.Is(err, worlds.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, worlds.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, worlds.ErrGone):
		return http.StatusGone, "gone"
	case errors.Is(err, worlds.ErrTooEarly):
		return http.StatusTooEarly, "too_early"
	case errors.Is(err, worlds.ErrNoRunner):
		// The server lacks the workflow code a call needs (runs.query without
		// Options.Workflows).
		return http.StatusNotImplemented, "not_implemented"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "unavailable"
	}
	return http.StatusInternalServerError, "internal"
}

func fail(w http.ResponseWriter, err error) {
	status, code := StatusOf(err)
	writeError(w, status, code, err.Error())
}

// readBody reads a request body of at most max bytes. A body too large answers
// 413, one the client did not finish sending before the server's ReadTimeout
// 408, and one cut short otherwise 400; ok is false once it has answered.
func readBody(w http.ResponseWriter, r *http.Request, max int64) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err == nil {
		return body, true
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		fail(w, err)
	case errors.As(err, &ne) && ne.Timeout():
		// The read deadline has passed, but the write deadline has not: the
		// client can still read why its request ended.
		writeError(w, http.StatusRequestTimeout, "timeout", "the request body did not arrive in time: "+err.Error())
	default:
		writeError(w, http.StatusBadRequest, "invalid_argument", "reading the request body: "+err.Error())
	}
	return nil, false
}

type webhookHandler struct {
	w worlds.World
	o Options
}

func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "webhooks accept POST")
		return
	}
	token := r.PathValue("token")
	body, ok := readBody(w, r, h.o.MaxBodyBytes)
	if !ok {
		return
	}
	payload := json.RawMessage(bytes.TrimSpace(body))
	if len(payload) > 0 && !json.Valid(payload) {
		payload, _ = json.Marshal(string(body))
	}
	if _, err := worlds.ResumeHook(r.Context(), h.w, token, payload); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"ok": true})
}

type rpcHandler struct {
	w        worlds.World
	o        Options
	guard    *httpguard.Writes
	guardErr error // Options.TrustedOrigins is malformed
}

// Request is the body of an RPC call.
type Request struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type params struct {
	RunID         string            `json:"runId"`
	StepID        string            `json:"stepId"`
	HookID        string            `json:"hookId"`
	WaitID        string            `json:"waitId"`
	WorkflowName  string            `json:"workflowName"`
	Status        worlds.RunStatus  `json:"status"`
	CreatedAfter  time.Time         `json:"createdAfter"`
	CreatedBefore time.Time         `json:"createdBefore"`
	AfterSeq      int64             `json:"afterSeq"`
	Limit         int               `json:"limit"`
	Cursor        string            `json:"cursor"`
	Input         json.RawMessage   `json:"input"`
	Attributes    map[string]string `json:"attributes"`
	Reason        string            `json:"reason"`
	Token         string            `json:"token"`
	Payload       json.RawMessage   `json:"payload"`
	Name          string            `json:"name"`
	From          int               `json:"from"`
	To            string            `json:"to"`
	NewRunID      string            `json:"newRunId"`
	Arg           json.RawMessage   `json:"arg"`
}

func required(field, v string) error {
	if v == "" {
		return &worlds.ArgumentError{Field: "params." + field, Value: v, Reason: "required"}
	}
	return nil
}

func (h *rpcHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "the RPC endpoint accepts POST")
		return
	}
	if h.guardErr != nil {
		writeError(w, http.StatusInternalServerError, "internal", h.guardErr.Error())
		return
	}
	if err := h.guard.Check(r); err != nil {
		var ref *httpguard.Refusal
		errors.As(err, &ref)
		writeError(w, ref.Status, ref.Code, err.Error())
		return
	}
	body, ok := readBody(w, r, h.o.MaxBodyBytes)
	if !ok {
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		fail(w, &worlds.ArgumentError{Field: "body", Value: len(body), Reason: "not a JSON RPC request: " + err.Error()})
		return
	}
	var p params
	if len(req.Params) > 0 && string(req.Params) != "null" {
		dec := json.NewDecoder(bytes.NewReader(req.Params))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			fail(w, &worlds.ArgumentError{Field: "params", Value: req.Method, Reason: err.Error()})
			return
		}
	}
	result, err := h.call(r.Context(), req.Method, p)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": result})
}

func (h *rpcHandler) call(ctx context.Context, method string, p params) (any, error) {
	need := func(fields ...[2]string) error {
		for _, f := range fields {
			if err := required(f[0], f[1]); err != nil {
				return err
			}
		}
		return nil
	}
	runID := [2]string{"runId", p.RunID}
	switch method {
	case "runs.start":
		if err := need([2]string{"workflowName", p.WorkflowName}); err != nil {
			return nil, err
		}
		if err := worlds.ValidateStart(h.o.Workflows, p.WorkflowName, p.RunID, p.Input, p.Attributes); err != nil {
			return nil, err
		}
		if p.RunID == "" {
			p.RunID = h.o.NewRunID()
		}
		return h.start(ctx, p)
	case "runs.signal":
		if err := need(runID, [2]string{"name", p.Name}); err != nil {
			return nil, err
		}
		if err := worlds.SendSignal(ctx, h.w, p.RunID, p.Name, p.Payload); err != nil {
			return nil, err
		}
		return h.w.GetRun(ctx, p.RunID)
	case "runs.signalWithStart":
		if err := need([2]string{"workflowName", p.WorkflowName}, [2]string{"name", p.Name}); err != nil {
			return nil, err
		}
		if err := worlds.ValidateStart(h.o.Workflows, p.WorkflowName, p.RunID, p.Input, p.Attributes); err != nil {
			return nil, err
		}
		if p.RunID == "" {
			p.RunID = h.o.NewRunID()
		}
		return worlds.SignalWithStart(ctx, h.w, p.RunID, p.WorkflowName, p.Input, p.Attributes, p.Name, p.Payload)
	case "runs.get":
		if err := need(runID); err != nil {
			return nil, err
		}
		return h.w.GetRun(ctx, p.RunID)
	case "runs.list":
		return h.w.ListRuns(ctx, worlds.RunFilter{WorkflowName: p.WorkflowName, Status: p.Status, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore,
			Attributes: p.Attributes, Limit: p.Limit, Cursor: p.Cursor})
	case "runs.query":
		if err := need(runID, [2]string{"name", p.Name}); err != nil {
			return nil, err
		}
		return worlds.QueryRun(ctx, h.w, h.o.Workflows, p.RunID, p.Name, p.Arg)
	case "runs.cancel":
		if err := need(runID); err != nil {
			return nil, err
		}
		if _, err := worlds.RequestCancel(ctx, h.w, p.RunID, p.Reason); err != nil {
			return nil, err
		}
		return h.w.GetRun(ctx, p.RunID)
	case "runs.reset":
		if err := need(runID, [2]string{"to", p.To}); err != nil {
			return nil, err
		}
		to, err := worlds.ParseResetPoint(p.To)
		if err != nil {
			return nil, err
		}
		if p.NewRunID == "" {
			p.NewRunID = h.o.NewRunID()
		}
		return worlds.ResetRun(ctx, h.w, worlds.ResetRequest{RunID: p.RunID, NewRunID: p.NewRunID, To: to, Reason: p.Reason})
	case "events.list":
		if err := need(runID); err != nil {
			return nil, err
		}
		page, err := h.w.ListEvents(ctx, p.RunID, worlds.EventFilter{AfterSeq: p.AfterSeq, Limit: p.Limit, Cursor: p.Cursor})
		if err == nil && !h.o.ShowTokens {
			HideTokens(page.Items)
		}
		return page, err
	case "steps.list":
		if err := need(runID); err != nil {
			return nil, err
		}
		return h.w.ListSteps(ctx, p.RunID, worlds.ListFilter{Limit: p.Limit, Cursor: p.Cursor})
	case "steps.get":
		if err := need(runID, [2]string{"stepId", p.StepID}); err != nil {
			return nil, err
		}
		return h.w.GetStep(ctx, p.RunID, p.StepID)
	case "hooks.list":
		page, err := h.w.ListHooks(ctx, worlds.HookFilter{RunID: p.RunID, Limit: p.Limit, Cursor: p.Cursor})
		if err != nil {
			return nil, err
		}
		views := worlds.Page[HookView]{Items: make([]HookView, len(page.Items)), Cursor: page.Cursor}
		for i, hk := range page.Items {
			views.Items[i] = h.hookView(hk)
		}
		return views, nil
	case "hooks.get":
		if err := need([2]string{"hookId", p.HookID}); err != nil {
			return nil, err
		}
		hk, err := h.w.GetHook(ctx, p.HookID)
		if err != nil {
			return nil, err
		}
		return h.hookView(hk), nil
	case "hooks.resume":
		return worlds.ResumeHook(ctx, h.w, p.Token, p.Payload)
	case "waits.get":
		if err := need(runID, [2]string{"waitId", p.WaitID}); err != nil {
			return nil, err
		}
		return h.w.GetWait(ctx, p.RunID, p.WaitID)
	case "streams.list":
		if err := need(runID); err != nil {
			return nil, err
		}
		return h.w.ListStreams(ctx, p.RunID)
	case "streams.read":
		if err := need(runID, [2]string{"name", p.Name}); err != nil {
			return nil, err
		}
		return h.w.ReadStream(ctx, p.RunID, p.Name, p.From, p.Limit)
	}
	return nil, &worlds.ArgumentError{Field: "method", Value: method, Reason: "unknown RPC method"}
}

// start creates the run with [worlds.StartRun], so a start retried with the same
// runId, workflowName and input returns the existing run.
func (h *rpcHandler) start(ctx context.Context, p params) (worlds.Run, error) {
	return worlds.StartRun(ctx, h.w, p.RunID, p.WorkflowName, p.Input, p.Attributes)
}

// HookView is a hook as hooks.get and hooks.list return it: the hook, and its
// webhook URL when the World knows its public base URL ([worlds.WebhookURLs]).
type HookView struct {
	worlds.Hook
	// WebhookURL is where a POST resumes the hook; empty when unknown, when the
	// hook no longer accepts payloads, or when the token is hidden.
	WebhookURL string `json:"webhookUrl,omitempty"`
	// TokenHidden reports that Token and WebhookURL were left out
	// (Options.ShowTokens is unset).
	TokenHidden bool `json:"tokenHidden,omitempty"`
}

func (h *rpcHandler) hookView(hk worlds.Hook) HookView {
	v := HookView{Hook: hk}
	if !h.o.ShowTokens {
		v.Token, v.TokenHidden = "", true
		return v
	}
	if u, ok := h.w.(worlds.WebhookURLs); ok && hk.Status == worlds.HookActive {
		v.WebhookURL, _ = u.WebhookURL(hk.Token)
	}
	return v
}

// HideTokens clears the hook tokens of hook_created and hook_conflict events in
// place, for listings that must not show them.
func HideTokens(events []worlds.Event) {
	for i := range events {
		events[i].Token = ""
	}
}
