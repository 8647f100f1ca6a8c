package workflowui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// The run view of a run blocked on its workflow code carries the error and its
// stack, and the UI's script renders them.
func TestBlockedRunShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.world.Append(ctx, "run-blocked",
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "devui.Approval", Input: json.RawMessage(`"ada"`)},
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventRunBlocked, Error: &worlds.ErrorInfo{Message: "workflow: panic: boom", Type: "panic", Stack: "goroutine 5 [running]:\ndevui.approval.Run"}},
	); err != nil {
		t.Fatal(err)
	}
	var view struct {
		Run worlds.Run `json:"run"`
	}
	e.call(t, "GET", "/api/runs/run-blocked", "", 200, &view)
	if b := view.Run.Blocked; view.Run.Status != worlds.RunRunning || b == nil || b.Error.Message != "workflow: panic: boom" || !strings.Contains(b.Error.Stack, "approval.Run") {
		t.Fatalf("run view %+v, want running and blocked with the panic's stack", view.Run)
	}
	res, err := http.Get(e.srv.URL + "/assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"r.blocked.error.message", "r.blocked.error.stack", `id="run-blocked"`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("app.js does not render %s", want)
		}
	}
}
