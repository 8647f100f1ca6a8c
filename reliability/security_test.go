package reliability_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/chaos"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// Gate waits on a hook whose token the runtime generates.
type Gate struct{}

func (Gate) Run(ctx workflow.Context, _ int) (string, error) {
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{})
	if err != nil {
		return "", err
	}
	return h.Receive(ctx)
}

// Secret waits on a hook with a caller-chosen token and logs around it.
type Secret struct{}

func (Secret) Run(ctx workflow.Context, token string) (string, error) {
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	v, err := h.Receive(ctx)
	if err != nil {
		return "", err
	}
	return workflow.Step(ctx, "use", func(context.Context, string) (string, error) { return "ok", nil }, v)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func serve(t *testing.T, logger *slog.Logger, runners ...worlds.Runner) (*workflow.Client, worlds.World) {
	return serveWith(t, logger, chaos.Rates{}, runners...)
}

// serveWith serves runners on an in-memory World with faults injected at rates,
// so failure paths (and their logging) run too.
func serveWith(t *testing.T, logger *slog.Logger, rates chaos.Rates, runners ...worlds.Runner) (*workflow.Client, worlds.World) {
	t.Helper()
	base, err := local.Open(context.Background(), local.Config{Path: local.Memory, Logger: logger, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w, err := chaos.Wrap(base, rates, 7)
	if err != nil {
		t.Fatal(err)
	}
	c, err := workflow.NewClient(workflow.Config{World: w, Logger: logger, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, runners...) }()
	t.Cleanup(func() { cancel(); <-done; _ = base.Close() })
	return c, w
}

// TestGeneratedTokensAreUnguessable: a hook created without a token gets at
// least 128 random bits, URL-safe, and no two runs share one.
func TestGeneratedTokensAreUnguessable(t *testing.T) {
	t.Parallel()
	c, w := serve(t, nil, workflow.Use(Gate{}))
	ctx := context.Background()
	const n = 40
	for i := range n {
		if _, err := workflow.Start(ctx, c, Gate{}, i); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		page, err := w.ListHooks(ctx, worlds.HookFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range page.Items {
			seen[h.Token] = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(seen) != n {
		t.Fatalf("%d distinct tokens for %d hooks", len(seen), n)
	}
	for tok := range seen {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			t.Fatalf("token %q is not URL-safe base64: %v", tok, err)
		}
		if len(raw)*8 < 128 {
			t.Fatalf("token %q carries %d bits, want >= 128", tok, len(raw)*8)
		}
	}
}

// TestEndpointsMountApart: the webhook can be exposed without the RPC endpoint
// and the RPC endpoint without the webhook.
func TestEndpointsMountApart(t *testing.T) {
	t.Parallel()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rpcBody := `{"method":"runs.list","params":{}}`
	cases := []struct {
		name    string
		h       http.Handler
		path    string
		body    string
		allowed bool
	}{
		{"webhook handler refuses rpc", worldhttp.Webhook(w, worldhttp.Options{}), "/v1/workflow/rpc", rpcBody, false},
		{"webhook handler serves webhooks", worldhttp.Webhook(w, worldhttp.Options{}), "/v1/workflow/webhooks/nope", `1`, true},
		{"rpc handler refuses webhooks", worldhttp.RPC(w, worldhttp.Options{}), "/v1/workflow/webhooks/nope", `1`, false},
		{"rpc handler serves rpc", worldhttp.RPC(w, worldhttp.Options{}), "/v1/workflow/rpc", rpcBody, true},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)))
		// A served webhook for an unknown token answers 404 naming the hook; an
		// unmounted route answers 404 "no route".
		mounted := rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "no route")
		if mounted != tc.allowed {
			t.Errorf("%s: status %d body %q", tc.name, rec.Code, rec.Body.String())
		}
	}
}

// TestNoSecretsAtInfo: neither a hook token nor a payload appears in any log
// record at Info level or above, from the runtime, the World or the webhook.
func TestNoSecretsAtInfo(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Failing appends make deliveries fail and be retried, so the error paths log.
	c, _ := serveWith(t, logger, chaos.Rates{AppendBefore: 0.5}, workflow.Use(Secret{}))
	const token, payload = "tok-7f3a9c1e5b2d4f60a8e1c3b5d7f9a1c3", "payload-4e6c8a0b2d4f6e8a"
	ctx := context.Background()
	const runID = "secret-run"
	for i := 0; ; i++ { // Start may hit an injected fault; retry it under one run ID
		_, err := workflow.Start(ctx, c, Secret{}, token, workflow.WithRunID(runID))
		if err == nil || errors.Is(err, worlds.ErrRunExists) {
			break
		}
		if i > 20 {
			t.Fatal(err)
		}
	}
	hooks := httptest.NewServer(c.WebhookHandler(workflow.WebhookOptions{}))
	defer hooks.Close()
	// A wrong token first, so failure paths log too.
	_, _ = workflow.ResumeHook(ctx, c, token+"x", payload)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := workflow.ResumeHook(ctx, c, token, payload); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hook never became resumable")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := workflow.Attach[string](c, runID).Result(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\"level\"") {
		t.Fatalf("nothing was logged (%q): the logger is not wired, so the check proves nothing", buf.String())
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if line == "" || strings.Contains(line, `"level":"DEBUG"`) {
			continue
		}
		if strings.Contains(line, token) || strings.Contains(line, payload) {
			t.Errorf("secret logged above Debug: %s", line)
		}
	}
}
