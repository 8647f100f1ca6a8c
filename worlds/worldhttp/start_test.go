package worldhttp_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// queueFailing fails its first n Queue calls, as a World whose queue is down.
type queueFailing struct {
	*fakeWorld
	n   int
	ids []string
}

func (f *queueFailing) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	f.ids = append(f.ids, opts.ID)
	if f.n > 0 {
		f.n--
		return "", errors.New("sqs down")
	}
	return f.fakeWorld.Queue(ctx, in, opts)
}

// A runs.start whose run was created but not queued is retried with the same
// runId and input: the retry returns the run and queues it, under the same
// delivery ID each time. A start with other input stays a conflict.
func TestStartRetriedAfterQueueFailure(t *testing.T) {
	t.Parallel()
	f := &queueFailing{fakeWorld: newFake(), n: 1}
	h := worldhttp.Handler(f, worldhttp.Options{})
	start := `{"method":"runs.start","params":{"workflowName":"flows.A","runId":"r1","input":{"a":1,"b":[1,2]}}}`
	if status, out := post(t, h, "/v1/workflow/rpc", start); status != http.StatusInternalServerError {
		t.Fatalf("first start with the queue down: %d %v", status, out)
	}
	if len(f.queued) != 0 {
		t.Fatalf("queued %v", f.queued)
	}
	// The same input, spelled differently.
	retry := `{"method":"runs.start","params":{"runId":"r1","workflowName":"flows.A","input":{ "b":[1, 2], "a":1 }}}`
	status, out := post(t, h, "/v1/workflow/rpc", retry)
	if status != http.StatusOK {
		t.Fatalf("retried start: %d %v", status, out)
	}
	if run, _ := out["result"].(map[string]any); run["runId"] != "r1" {
		t.Fatalf("retried start returned %v", out)
	}
	if len(f.queued) != 1 || f.queued[0].RunID != "r1" {
		t.Fatalf("queued %+v, want the run's first delivery", f.queued)
	}
	if len(f.ids) != 2 || f.ids[0] != "start-r1" || f.ids[1] != f.ids[0] {
		t.Fatalf("delivery IDs %q: want one fixed ID for every attempt", f.ids)
	}
	for name, body := range map[string]string{
		"other input":    `{"method":"runs.start","params":{"runId":"r1","workflowName":"flows.A","input":{"a":2}}}`,
		"no input":       `{"method":"runs.start","params":{"runId":"r1","workflowName":"flows.A"}}`,
		"other workflow": `{"method":"runs.start","params":{"runId":"r1","workflowName":"flows.B","input":{"a":1,"b":[1,2]}}}`,
	} {
		if status, out := post(t, h, "/v1/workflow/rpc", body); status != http.StatusConflict {
			t.Fatalf("%s: %d %v, want 409", name, status, out)
		}
	}
	// Once the run has started, a retry returns it without queueing it again.
	f.runs["r1"].Status = worlds.RunRunning
	if status, _ := post(t, h, "/v1/workflow/rpc", retry); status != http.StatusOK || len(f.queued) != 1 {
		t.Fatalf("retry of a started run: %d, queued %d", status, len(f.queued))
	}
}

// withURLs gives the fake a public base URL.
type withURLs struct{ *fakeWorld }

func (withURLs) WebhookURL(token string) (string, bool) {
	return "https://hooks.example.com/v1/workflow/webhooks/" + token, true
}

func (w withURLs) GetHook(_ context.Context, id string) (worlds.Hook, error) {
	for _, h := range w.hooks {
		if h.HookID == id {
			return h, nil
		}
	}
	return worlds.Hook{}, worlds.ErrHookNotFound
}

// A World that knows its base URL gives hook views their webhook URL.
func TestHookViewsCarryTheWebhookURL(t *testing.T) {
	t.Parallel()
	h := worldhttp.Handler(withURLs{newFake()}, worldhttp.Options{ShowTokens: true})
	status, out := post(t, h, "/v1/workflow/rpc", `{"method":"hooks.get","params":{"hookId":"h1"}}`)
	hook, _ := out["result"].(map[string]any)
	if status != http.StatusOK || hook["webhookUrl"] != "https://hooks.example.com/v1/workflow/webhooks/tok" || hook["hookId"] != "h1" {
		t.Fatalf("hooks.get = %d %v", status, out)
	}
	status, out = post(t, worldhttp.Handler(newFake(), worldhttp.Options{}), "/v1/workflow/rpc", `{"method":"hooks.list","params":{}}`)
	if status != http.StatusOK {
		t.Fatalf("hooks.list = %d %v", status, out)
	}
}
