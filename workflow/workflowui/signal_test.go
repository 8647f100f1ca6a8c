package workflowui_test

import (
	"context"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// POST /api/runs/{id}/signal buffers the signal in the run's log; a bad
// request, an unknown run and an ended run are refused with their status.
func TestSendSignal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.start(t, `"ada"`)
	e.call(t, "POST", "/api/runs/"+id+"/signal", `{"name":"nudge","payload":{"n":1}}`, 202, nil)
	evs, err := worlds.AllEvents(context.Background(), e.world, id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		found = found || ev.Type == worlds.EventSignalReceived && ev.CorrelationID == "nudge" && string(ev.Payload) == `{"n":1}`
	}
	if !found {
		t.Fatalf("log %+v has no signal nudge", evs)
	}
	e.call(t, "POST", "/api/runs/"+id+"/signal", `{"payload":1}`, 400, nil)
	e.call(t, "POST", "/api/runs/no-such-run/signal", `{"name":"nudge"}`, 404, nil)
	e.call(t, "POST", "/api/runs/"+id+"/cancel", `{}`, 200, nil)
	e.waitFor(t, id, func(v runView) bool { return v.Run.Status.Terminal() })
	e.call(t, "POST", "/api/runs/"+id+"/signal", `{"name":"nudge"}`, 410, nil)
}
