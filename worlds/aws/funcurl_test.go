package awsworld_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// funcURLRequest is a request as a Lambda Function URL delivers it.
func funcURLRequest(method, path, body string, base64Body bool) *events.LambdaFunctionURLRequest {
	r := &events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: path, Body: body, IsBase64Encoded: base64Body,
		Headers: map[string]string{"content-type": "application/json", "host": "abc.lambda-url.us-east-1.on.aws"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: "abc.lambda-url.us-east-1.on.aws",
			HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.7"},
		},
	}
	if base64Body {
		r.Body = base64.StdEncoding.EncodeToString([]byte(body))
		r.Headers["content-type"] = "application/x-www-form-urlencoded"
	}
	return r
}

type funcURLHandler = func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)

func invokeURL(t *testing.T, h funcURLHandler, req *events.LambdaFunctionURLRequest) (int, map[string]any) {
	t.Helper()
	resp, err := h(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s %s: body is not JSON: %q", req.RequestContext.HTTP.Method, req.RawPath, body)
	}
	return resp.StatusCode, out
}

// The Function URL path a deployment takes: lambdaurl (RESPONSE_STREAM) over
// awsworld.HTTP, driven with Function URL events, including a base64 form body
// as Function URLs deliver non-JSON webhooks.
func TestFunctionURLAdapter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	h := lambdaurl.Wrap(awsworld.HTTP(e.w))
	status, out := invokeURL(t, h, funcURLRequest(http.MethodPost, "/v1/workflow/rpc", `{"method":"runs.start","params":{"workflowName":"flows.A","runId":"fu","input":{"n":1}}}`, false))
	if status != http.StatusOK || out["result"].(map[string]any)["runId"] != "fu" {
		t.Fatalf("runs.start: %d %v", status, out)
	}
	mustAppend(t, e.w, "fu", worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "fu-hook", Token: "fu-token"})
	status, out = invokeURL(t, h, funcURLRequest(http.MethodPost, "/v1/workflow/rpc", `{"method":"hooks.get","params":{"hookId":"fu-hook"}}`, false))
	if status != http.StatusOK || out["result"].(map[string]any)["webhookUrl"] != "https://example.com/v1/workflow/webhooks/fu-token" {
		t.Fatalf("hooks.get: %d %v", status, out)
	}
	if status, out := invokeURL(t, h, funcURLRequest(http.MethodPost, "/v1/workflow/webhooks/fu-token", "paid=true&amount=3", true)); status != http.StatusAccepted {
		t.Fatalf("webhook: %d %v", status, out)
	}
	hook, err := e.w.GetHook(context.Background(), "fu-hook")
	if err != nil || hook.Received != 1 {
		t.Fatalf("hook after webhook = %+v, %v", hook, err)
	}
	events, err := worlds.AllEvents(context.Background(), e.w, "fu")
	if err != nil {
		t.Fatal(err)
	}
	if p := string(events[len(events)-1].Payload); !strings.Contains(p, "paid=true") {
		t.Fatalf("webhook payload %s, want the decoded form body as a JSON string", p)
	}
	for _, tc := range []struct {
		name         string
		h            funcURLHandler
		method, path string
		status       int
	}{
		{"unknown route", h, http.MethodPost, "/v1/nope", http.StatusNotFound},
		{"GET rpc", h, http.MethodGet, "/v1/workflow/rpc", http.StatusMethodNotAllowed},
		{"unknown token", h, http.MethodPost, "/v1/workflow/webhooks/guess", http.StatusNotFound},
		{"rpc on the webhook-only URL", lambdaurl.Wrap(awsworld.Webhook(e.w)), http.MethodPost, "/v1/workflow/rpc", http.StatusNotFound},
	} {
		if status, out := invokeURL(t, tc.h, funcURLRequest(tc.method, tc.path, `{}`, false)); status != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, status, out, tc.status)
		}
	}
}
