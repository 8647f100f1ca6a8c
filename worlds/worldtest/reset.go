package worldtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// reset: worlds.ResetRun copies a prefix of a live run's log into a new run,
// in several appends, with hook IDs moved to the new run and the token owned by
// it, and ends the old run with a link; a retry with the same new run ID adds
// nothing; a point inside a step is refused.
func (s *suite) reset(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, workflow := newRun(t, w)
	const steps = 12 // more events than one append of a copy takes
	for i := 1; i <= steps; i++ {
		id := "step_" + strconv.Itoa(i)
		appendOK(t, w, runID,
			worlds.Event{Type: worlds.EventStepCreated, CorrelationID: id, StepName: "s", Input: json.RawMessage(strconv.Itoa(i))},
			worlds.Event{Type: worlds.EventStepStarted, CorrelationID: id, Attempt: 1})
		appendOK(t, w, runID, worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: id, Output: json.RawMessage(strconv.Itoa(i * 10))})
	}
	token := uid(t, "tok")
	hookID := fmt.Sprintf("hook_%d.%s", steps+1, runID)
	due := s.now().Add(365 * 24 * 3600e9)
	waitID := fmt.Sprintf("wait_%d", steps+2)
	cut := appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: hookID, Token: token},
		worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: waitID, ResumeAt: &due},
		worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: waitID, Reason: worlds.WaitCancelled},
		worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"cairn.version.x": "2", worlds.AttrCancelRequested: "stop"}},
	)[3].Seq
	inFlight := appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("step_%d", steps+3), StepName: "s"},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: fmt.Sprintf("step_%d", steps+3), Attempt: 1})[1].Seq

	newID := uid(t, "reset")
	_, err := worlds.ResetRun(c, w, worlds.ResetRequest{RunID: runID, NewRunID: newID, To: worlds.ResetPoint{Seq: inFlight}})
	wantErr(t, err, worlds.ErrResetPoint)
	var pe *worlds.ResetPointError
	if !errors.As(err, &pe) || pe.Seq != inFlight {
		t.Fatalf("reset inside a step: %v, want a *ResetPointError for %d", err, inFlight)
	}
	if _, err := w.GetRun(c, newID); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Fatalf("a refused reset created run %s: %v", newID, err)
	}

	got, err := worlds.ResetRun(c, w, worlds.ResetRequest{RunID: runID, NewRunID: newID, To: worlds.ResetPoint{Seq: cut}})
	if err != nil {
		t.Fatal(err)
	}
	if got.RunID != newID || got.WorkflowName != workflow || string(got.Input) != `{"n":1}` || got.Status != worlds.RunRunning {
		t.Fatalf("new run %+v", got)
	}
	a := got.Attributes
	if a[worlds.AttrResetFrom] != runID || a[worlds.AttrResetSeq] != strconv.FormatInt(cut, 10) || a[worlds.AttrRandomSeed] != runID ||
		a["cairn.version.x"] != "2" || a[worlds.AttrCancelRequested] != "" || a[worlds.AttrResetCopied] == "" {
		t.Fatalf("new run attributes %v", a)
	}
	old, err := w.GetRun(c, runID)
	if err != nil || old.Status != worlds.RunCancelled || old.Attributes[worlds.AttrResetTo] != newID {
		t.Fatalf("old run %s %v, %v; want cancelled, linked to %s", old.Status, old.Attributes, err, newID)
	}
	oldEvents, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	newEvents, err := worlds.AllEvents(c, w, newID)
	if err != nil {
		t.Fatal(err)
	}
	// The copy is the prefix, event for event, and the marker of a complete copy.
	if int64(len(newEvents)) != cut+1 {
		t.Fatalf("new run has %d events (%s), want %d", len(newEvents), types(newEvents), cut+1)
	}
	for i, ev := range newEvents[:cut] {
		o := oldEvents[i]
		wantCorr := o.CorrelationID
		if o.CorrelationID == hookID {
			wantCorr = fmt.Sprintf("hook_%d.%s", steps+1, newID)
		}
		if ev.Seq != o.Seq || ev.Type != o.Type || ev.CorrelationID != wantCorr || string(ev.Output) != string(o.Output) {
			t.Fatalf("event %d: %+v, want a copy of %+v", i+1, ev, o)
		}
	}
	if st, err := w.GetStep(c, newID, "step_5"); err != nil || st.Status != worlds.StepCompleted || string(st.Output) != "50" {
		t.Fatalf("copied step: %+v, %v", st, err)
	}
	if h, err := w.GetHookByToken(c, token); err != nil || h.RunID != newID || h.HookID != fmt.Sprintf("hook_%d.%s", steps+1, newID) {
		t.Fatalf("token owned by %+v, %v; want the new run's hook", h, err)
	}
	if wt, err := w.GetWait(c, newID, waitID); err != nil || wt.Status != worlds.WaitCompleted {
		t.Fatalf("copied wait: %+v, %v", wt, err)
	}

	again, err := worlds.ResetRun(c, w, worlds.ResetRequest{RunID: runID, NewRunID: newID, To: worlds.ResetPoint{Seq: cut}})
	if err != nil || again.EventCount != got.EventCount {
		t.Fatalf("reset retried: %d events, %v; want the same run with %d", again.EventCount, err, got.EventCount)
	}
}
