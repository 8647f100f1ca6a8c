package local

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

func TestWebhookURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name, base, token, want string
		ok                      bool
	}{
		{"no base URL", "", "tok", "", false},
		{"base URL", "http://localhost:8080/v1/workflow", "tok", "http://localhost:8080/v1/workflow/webhooks/tok", true},
		{"trailing slash", "https://dev.example.com/v1/workflow/", "tok", "https://dev.example.com/v1/workflow/webhooks/tok", true},
		{"token escaped", "http://localhost:8080/v1/workflow", "a/b c", "http://localhost:8080/v1/workflow/webhooks/a%2Fb%20c", true},
		{"no token", "http://localhost:8080/v1/workflow", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, err := Open(ctx, Config{Path: Memory, BaseURL: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if got, ok := w.WebhookURL(tc.token); got != tc.want || ok != tc.ok {
				t.Errorf("WebhookURL(%q) = %q, %v; want %q, %v", tc.token, got, ok, tc.want, tc.ok)
			}
		})
	}
	for _, bad := range []string{"localhost:8080", "/v1/workflow", "http://"} {
		_, err := Open(ctx, Config{Path: Memory, BaseURL: bad})
		var ae *worlds.ArgumentError
		if !errors.As(err, &ae) || ae.Field != "local.Config.BaseURL" {
			t.Errorf("BaseURL %q: %v, want an *ArgumentError on local.Config.BaseURL", bad, err)
		}
	}
}

// With BaseURL set, hook views served by worldhttp carry the webhook URL, and a
// POST to it through the same handler resumes the hook.
func TestWebhookURLResumesTheHook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	w, err := Open(ctx, Config{Path: Memory, BaseURL: srv.URL + worldhttp.DefaultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mux.Handle("/", worldhttp.Handler(w, worldhttp.Options{ShowTokens: true}))
	if _, err := w.Append(ctx, "r1", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h1", Token: "tok-1"}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.URL+worldhttp.DefaultPrefix+"/rpc", "application/json", strings.NewReader(`{"method":"hooks.get","params":{"hookId":"h1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			WebhookURL string `json:"webhookUrl"`
		} `json:"result"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || out.Result.WebhookURL != srv.URL+"/v1/workflow/webhooks/tok-1" {
		t.Fatalf("hooks.get webhookUrl = %q, %v", out.Result.WebhookURL, err)
	}
	resp, err = http.Post(out.Result.WebhookURL, "application/json", strings.NewReader(`{"approved":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST webhook URL = %d, want 202", resp.StatusCode)
	}
	evs, err := w.ListEvents(ctx, "r1", worlds.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if last := evs.Items[len(evs.Items)-1]; last.Type != worlds.EventHookReceived || last.CorrelationID != "h1" {
		t.Fatalf("last event = %+v, want hook_received for h1", last)
	}
}
