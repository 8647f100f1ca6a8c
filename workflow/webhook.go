package workflow

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/cairn-go/cairn/worlds"
)

// DefaultWebhookMaxBytes bounds webhook bodies when WebhookOptions.MaxBodyBytes is zero.
const DefaultWebhookMaxBytes = 1 << 20

// WebhookOptions configure [Client.WebhookHandler].
type WebhookOptions struct {
	// MaxBodyBytes bounds the request body; zero means DefaultWebhookMaxBytes, and it
	// is never above the client's payload limit.
	MaxBodyBytes int64
}

// WebhookHandler returns an http.Handler that resumes hooks by token: a POST whose
// last path segment is the token (or whose route has a {token} wildcard) and whose
// body is JSON is delivered to the hook as its payload, and the handler answers 202
// with the run ID. Errors are plain 4xx answers: 405 for another method, 400 for a
// missing token or a body that is not JSON, 413 for a body over the limit, 404 for
// an unknown or disposed token, 410 for a finished run. The token is the only
// authorization, so use long random tokens (the default) for public webhooks.
func (c *Client) WebhookHandler(opts WebhookOptions) http.Handler {
	limit := opts.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultWebhookMaxBytes
	}
	limit = min(limit, int64(c.eng.maxPayload))
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			rw.Header().Set("Allow", http.MethodPost)
			webhookError(rw, http.StatusMethodNotAllowed, "use POST")
			return
		}
		token := r.PathValue("token")
		if token == "" {
			token = r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		}
		if token == "" || len(token) > worlds.MaxTokenLength {
			webhookError(rw, http.StatusBadRequest, "missing or oversized hook token in the path")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, limit))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			webhookError(rw, http.StatusRequestEntityTooLarge, "body larger than the limit")
			return
		case err != nil:
			webhookError(rw, http.StatusBadRequest, "reading body: "+err.Error())
			return
		}
		if len(body) == 0 {
			body = []byte("null")
		}
		if !json.Valid(body) {
			webhookError(rw, http.StatusBadRequest, "body is not JSON")
			return
		}
		rc, err := worlds.ResumeHook(r.Context(), c.eng.world, token, body)
		switch {
		case errors.Is(err, worlds.ErrHookNotFound), errors.Is(err, worlds.ErrNotFound):
			webhookError(rw, http.StatusNotFound, "no active hook for this token")
			return
		case errors.Is(err, worlds.ErrGone):
			webhookError(rw, http.StatusGone, "the hook's run has finished")
			return
		case errors.Is(err, worlds.ErrInvalidArgument), errors.Is(err, worlds.ErrEventInvalid):
			webhookError(rw, http.StatusBadRequest, err.Error())
			return
		case err != nil:
			c.eng.log.ErrorContext(r.Context(), "webhook resume failed", "error", err)
			webhookError(rw, http.StatusInternalServerError, "could not resume the hook")
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(rw).Encode(map[string]string{"runId": rc.RunID})
	})
}

func webhookError(rw http.ResponseWriter, code int, msg string) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(map[string]string{"error": msg})
}
