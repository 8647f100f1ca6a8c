package awsworld_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func TestHTTPEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	srv := httptest.NewServer(awsworld.HTTP(e.w))
	t.Cleanup(srv.Close)
	call := func(method string, params any) (int, map[string]any) {
		body, _ := json.Marshal(map[string]any{"method": method, "params": params})
		resp, err := http.Post(srv.URL+"/v1/workflow/rpc", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	status, out := call("runs.start", map[string]any{"workflowName": "flows.A", "runId": "h1", "input": map[string]int{"n": 1}})
	if status != 200 {
		t.Fatalf("start: %d %v", status, out)
	}
	mustAppend(t, e.w, "h1", worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hk", Token: "secret-token"})
	resp, err := http.Post(srv.URL+"/v1/workflow/webhooks/secret-token", "application/json", strings.NewReader(`{"approved":true}`))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, _ = http.Post(srv.URL+"/v1/workflow/webhooks/wrong", "application/json", strings.NewReader(`{}`))
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown token: %d", resp.StatusCode)
	}
	resp.Body.Close()
	if status, out := call("hooks.get", map[string]string{"hookId": "hk"}); status != 200 || out["result"].(map[string]any)["received"].(float64) != 1 {
		t.Fatalf("hook after webhook: %d %v", status, out)
	}
	if status, out := call("events.list", map[string]any{"runId": "h1", "limit": 2}); status != 200 || len(out["result"].(map[string]any)["items"].([]any)) != 2 {
		t.Fatalf("events: %d %v", status, out)
	}
	if status, _ := call("runs.cancel", map[string]string{"runId": "h1"}); status != 200 {
		t.Fatalf("cancel: %d", status)
	}
	// A running run is asked to stop; asking again while it has not ended is fine.
	if status, out := call("runs.cancel", map[string]string{"runId": "h1"}); status != 200 || out["result"].(map[string]any)["attributes"].(map[string]any)[worlds.AttrCancelRequested] != "cancelled" {
		t.Fatalf("cancel twice: %d %v", status, out)
	}
	// Once its worker has ended it, a cancel is refused.
	mustAppend(t, e.w, "h1", worlds.Event{Type: worlds.EventRunCancelled, Reason: "cancelled"})
	if status, _ := call("runs.cancel", map[string]string{"runId": "h1"}); status != http.StatusGone {
		t.Fatalf("cancel after the end: %d", status)
	}
	if status, _ := call("runs.list", map[string]any{"createdAfter": time.Now().Add(time.Hour), "createdBefore": time.Now()}); status != 200 {
		t.Fatalf("empty interval: %d", status)
	}
	// The start, the webhook, each of the two accepted cancels and the refused
	// cancel of the cancelled run (which wakes it again, in case an earlier
	// wake-up failed) queued a delivery for the run.
	got := 0
	for range 6 {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		got += len(out.Messages)
		if got >= 5 {
			break
		}
	}
	if got != 5 {
		t.Fatalf("%d deliveries queued, want 5", got)
	}
}
