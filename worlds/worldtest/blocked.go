package worldtest

import (
	"reflect"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// blockedRuns checks run_blocked and run_unblocked: the run stays running with
// Blocked set, a second run_blocked keeps Since and replaces the error,
// run_unblocked clears it (and is refused on a run that is not blocked), and
// the run's end clears it too.
func (s *suite) blockedRuns(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)

	first := worlds.ErrorInfo{Message: "workflow: panic: assignment to entry in nil map", Type: "panic", Stack: "goroutine 7 [running]:\nmain.(*Order).Run()"}
	out := appendOK(t, w, runID, worlds.Event{Type: worlds.EventRunBlocked, Error: &first})
	if out[0].Error == nil || out[0].Error.Stack != first.Stack {
		t.Errorf("stored run_blocked %+v: the error's stack is lost", out[0])
	}
	run, err := w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != worlds.RunRunning || run.Blocked == nil || !reflect.DeepEqual(run.Blocked.Error, first) || run.Blocked.Since.IsZero() || !run.Blocked.At.Equal(run.Blocked.Since) {
		t.Fatalf("blocked run view: status %s, blocked %+v; want running, blocked on %+v", run.Status, run.Blocked, first)
	}
	since := run.Blocked.Since

	second := worlds.ErrorInfo{Message: "workflow: nondeterministic workflow code", Type: "nondeterminism"}
	appendOK(t, w, runID, worlds.Event{Type: worlds.EventRunBlocked, Error: &second})
	run, err = w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Blocked == nil || !reflect.DeepEqual(run.Blocked.Error, second) || !run.Blocked.Since.Equal(since) || run.Blocked.At.Before(since) {
		t.Fatalf("blocked again: %+v; want error %+v since %v", run.Blocked, second, since)
	}

	appendOK(t, w, runID, worlds.Event{Type: worlds.EventRunUnblocked})
	run, err = w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != worlds.RunRunning || run.Blocked != nil {
		t.Fatalf("unblocked run: status %s, blocked %+v", run.Status, run.Blocked)
	}
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventRunUnblocked})
	wantErr(t, err, worlds.ErrConflict, worlds.ErrRunNotBlocked)

	// Blocked again, then the run ends (a cancel, a fixed deploy that completes it).
	appendOK(t, w, runID, worlds.Event{Type: worlds.EventRunBlocked, Error: &first},
		worlds.Event{Type: worlds.EventRunCompleted})
	run, err = w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != worlds.RunCompleted || run.Blocked != nil {
		t.Fatalf("ended run: status %s, blocked %+v; want completed and not blocked", run.Status, run.Blocked)
	}
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventRunBlocked, Error: &first})
	wantErr(t, err, worlds.ErrGone, worlds.ErrRunFinished)
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventRunBlocked})
	wantErr(t, err, worlds.ErrEventInvalid)
}
