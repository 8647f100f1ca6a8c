package worldhttp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// serve starts h on a loopback httptest server.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// send POSTs body to url with headers and returns the status and the body.
func send(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A page open in the developer's browser cannot start or cancel runs through
// the RPC: a form or text/plain body answers 415 and a cross-site or
// foreign-origin request 403, before anything is written. Webhooks, called by
// third parties with any body and no browser headers, are not checked.
func TestRPCRefusesCrossSiteWrites(t *testing.T) {
	t.Parallel()
	const start = `{"method":"runs.start","params":{"workflowName":"flows.A","runId":"r-xsite"}}`
	const jsonCT = "application/json"
	for _, tc := range []struct {
		name    string
		opts    worldhttp.Options
		path    string
		headers map[string]string
		status  int
	}{
		{"text/plain", worldhttp.Options{}, "/v1/workflow/rpc", map[string]string{"Content-Type": "text/plain"}, 415},
		{"form", worldhttp.Options{}, "/v1/workflow/rpc", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, 403},
		{"no content type", worldhttp.Options{}, "/v1/workflow/rpc", nil, 415},
		{"cross-site JSON", worldhttp.Options{}, "/v1/workflow/rpc", map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"foreign Origin", worldhttp.Options{}, "/v1/workflow/rpc", map[string]string{"Content-Type": jsonCT, "Origin": "https://evil.example"}, 403},
		{"trusted Origin", worldhttp.Options{TrustedOrigins: []string{"https://ops.example.com"}}, "/v1/workflow/rpc", map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "cross-site", "Origin": "https://ops.example.com"}, 200},
		{"same-origin page", worldhttp.Options{}, "/v1/workflow/rpc", map[string]string{"Content-Type": jsonCT, "Sec-Fetch-Site": "same-origin"}, 200},
		{"CLI", worldhttp.Options{}, "/v1/workflow/rpc", map[string]string{"Content-Type": jsonCT}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			srv := serve(t, worldhttp.Handler(f, tc.opts))
			status, body := send(t, srv.URL+tc.path, start, tc.headers)
			if status != tc.status {
				t.Fatalf("status %d %s, want %d", status, body, tc.status)
			}
			var eb worldhttp.ErrorBody
			if status != 200 && (json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Code == "") {
				t.Fatalf("refusal body %q is not an error body", body)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if wrote := len(f.appends) > 0; wrote != (tc.status == 200) {
				t.Fatalf("status %d with %d appends", status, len(f.appends))
			}
		})
	}
	t.Run("webhook takes any body from anywhere", func(t *testing.T) {
		t.Parallel()
		f := newFake()
		srv := serve(t, worldhttp.Handler(f, worldhttp.Options{}))
		status, body := send(t, srv.URL+"/v1/workflow/webhooks/tok", "approved=yes", map[string]string{
			"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site", "Origin": "https://hooks.vendor.example"})
		if status != http.StatusAccepted {
			t.Fatalf("webhook: %d %s", status, body)
		}
	})
}

func TestTrustedOriginsAreValidated(t *testing.T) {
	t.Parallel()
	opts := worldhttp.Options{TrustedOrigins: []string{"ops.example.com"}}
	err := opts.Validate()
	if !errors.Is(err, worlds.ErrInvalidArgument) || !strings.Contains(err.Error(), "TrustedOrigins") || !strings.Contains(err.Error(), "ops.example.com") {
		t.Fatalf("Validate = %v, want an argument error naming the field and value", err)
	}
	if err := (worldhttp.Options{TrustedOrigins: []string{"https://ops.example.com:8443"}}).Validate(); err != nil {
		t.Fatal(err)
	}
	// Misconfigured, the handler refuses rather than trusting or ignoring the entry.
	f := newFake()
	srv := serve(t, worldhttp.RPC(f, opts))
	status, body := send(t, srv.URL+"/v1/workflow/rpc", `{"method":"runs.start","params":{"workflowName":"flows.A"}}`, map[string]string{"Content-Type": "application/json"})
	if status != http.StatusInternalServerError || !strings.Contains(body, "ops.example.com") || len(f.appends) != 0 {
		t.Fatalf("misconfigured handler: %d %s, %d appends", status, body, len(f.appends))
	}
}

// hooksWorld is the fake with one hook its listings, events and webhook URL show.
type hooksWorld struct{ *fakeWorld }

func (w hooksWorld) hook() worlds.Hook { return w.hooks["tok"] }
func (w hooksWorld) GetHook(_ context.Context, id string) (worlds.Hook, error) {
	if id == w.hook().HookID {
		return w.hook(), nil
	}
	return worlds.Hook{}, worlds.ErrHookNotFound
}
func (w hooksWorld) ListHooks(context.Context, worlds.HookFilter) (worlds.Page[worlds.Hook], error) {
	return worlds.Page[worlds.Hook]{Items: []worlds.Hook{w.hook()}}, nil
}
func (w hooksWorld) ListEvents(context.Context, string, worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	return worlds.Page[worlds.Event]{Items: []worlds.Event{
		{Seq: 1, Type: worlds.EventRunCreated, WorkflowName: "flows.A"},
		{Seq: 2, Type: worlds.EventHookCreated, CorrelationID: "h1", Token: "tok"},
		{Seq: 3, Type: worlds.EventHookConflict, CorrelationID: "h2", Token: "tok"},
	}}, nil
}
func (hooksWorld) WebhookURL(token string) (string, bool) {
	return "http://127.0.0.1:8080/v1/workflow/webhooks/" + token, true
}

// Hook tokens resume hooks, so listings leave them (and the webhook URLs that
// hold them) out unless ShowTokens says otherwise; resuming by token works
// either way.
func TestHookTokensAreHiddenUnlessShown(t *testing.T) {
	t.Parallel()
	for _, show := range []bool{false, true} {
		srv := serve(t, worldhttp.Handler(hooksWorld{newFake()}, worldhttp.Options{ShowTokens: show}))
		for _, call := range []string{
			`{"method":"hooks.list","params":{}}`,
			`{"method":"hooks.get","params":{"hookId":"h1"}}`,
			`{"method":"events.list","params":{"runId":"r1"}}`,
		} {
			status, body := send(t, srv.URL+"/v1/workflow/rpc", call, map[string]string{"Content-Type": "application/json"})
			if status != 200 {
				t.Fatalf("%s: %d %s", call, status, body)
			}
			if got := strings.Contains(body, `"tok"`) || strings.Contains(body, "/webhooks/tok"); got != show {
				t.Fatalf("ShowTokens %v, %s answered %s", show, call, body)
			}
			if hooks := !strings.Contains(call, "events"); hooks && strings.Contains(body, `"tokenHidden":true`) == show {
				t.Fatalf("ShowTokens %v, %s: tokenHidden wrong in %s", show, call, body)
			}
		}
		status, body := send(t, srv.URL+"/v1/workflow/rpc", `{"method":"hooks.resume","params":{"token":"tok","payload":{"ok":true}}}`, map[string]string{"Content-Type": "application/json"})
		if status != 200 || !strings.Contains(body, `"hookId":"h1"`) {
			t.Fatalf("ShowTokens %v, hooks.resume by token: %d %s", show, status, body)
		}
	}
}

// A body that stops arriving answers 408 once the server's ReadTimeout passes,
// not 500: the client, not the World, is at fault.
func TestSlowBodyAnswers408(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/v1/workflow/rpc", "/v1/workflow/webhooks/tok"} {
		srv := httptest.NewUnstartedServer(worldhttp.Handler(newFake(), worldhttp.Options{}))
		srv.Config.ReadTimeout, srv.Config.WriteTimeout = 100*time.Millisecond, 30*time.Second
		srv.Start()
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		dl, _ := ctx.Deadline()
		_ = conn.SetDeadline(dl)
		io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{\"method\":")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a stalled body: %v", path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"timeout"`) {
			t.Fatalf("%s: %d %s, want a JSON 408", path, res.StatusCode, b)
		}
	}
}
