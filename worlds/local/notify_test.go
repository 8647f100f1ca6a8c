package local

import (
	"context"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

var runFailed = worlds.Event{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{Message: "boom"}}

// TestSubscribeRunHearsTheEnd: a subscriber hears of an append that ends the
// run, not of the appends before it, nor after it stopped; others' runs are
// not its business.
func TestSubscribeRunHearsTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := openEager(t, Config{})
	ended, stop := w.SubscribeRun("r")
	other, stopOther := w.SubscribeRun("other")
	defer stopOther()
	heard := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if _, err := w.Append(ctx, "r", created("wf", `1`), started, stepCreated, stepStarted); err != nil {
		t.Fatal(err)
	}
	if heard(ended) {
		t.Fatal("heard an end before the run ended")
	}
	if _, err := w.Append(ctx, "r", stepDone, completed); err != nil {
		t.Fatal(err)
	}
	if !heard(ended) {
		t.Fatal("did not hear the run end")
	}
	if heard(other) {
		t.Fatal("another run's subscriber heard this run end")
	}
	stop()
	if _, err := w.Append(ctx, "s", created("wf", `1`), runFailed); err != nil {
		t.Fatal(err)
	}
	w.subMu.Lock()
	left := len(w.runSubs)
	w.subMu.Unlock()
	if left != 1 {
		t.Fatalf("%d runs with subscribers after one stopped, want 1", left)
	}
	// A run that ends at once, in its creation's append, is heard too.
	failed, stopFailed := w.SubscribeRun("f")
	defer stopFailed()
	if _, err := w.Append(ctx, "f", created("wf", `1`), runFailed); err != nil {
		t.Fatal(err)
	}
	if !heard(failed) {
		t.Fatal("did not hear a run that failed in its first append")
	}
}
