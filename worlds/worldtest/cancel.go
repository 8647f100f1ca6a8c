package worldtest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// cancelledWaits: a wait_completed with Reason WaitCancelled completes a wait
// before it is due, and is stored with its reason; any other reason is invalid.
func (s *suite) cancelledWaits(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	due := s.now().Add(time.Hour)
	appendOK(t, w, runID, worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "timer", ResumeAt: &due})

	_, err := w.Append(c, runID, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "timer", Reason: "bogus"})
	wantErr(t, err, worlds.ErrEventInvalid)
	var ee *worlds.EventError
	if !errors.As(err, &ee) || ee.Field != "reason" {
		t.Errorf("wait_completed with reason %q: %v, want an *EventError naming field reason", "bogus", err)
	}
	if wt, err := w.GetWait(c, runID, "timer"); err != nil || wt.Status != worlds.WaitWaiting {
		t.Fatalf("wait after a rejected completion: %+v, %v", wt, err)
	}

	out := appendOK(t, w, runID, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "timer", Reason: worlds.WaitCancelled})
	if out[0].Reason != worlds.WaitCancelled || out[0].Seq != 4 {
		t.Errorf("stored cancel %+v", out[0])
	}
	wt, err := w.GetWait(c, runID, "timer")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Status != worlds.WaitCompleted || wt.CompletedAt == nil || !wt.CompletedAt.Before(due) || !wt.ResumeAt.Equal(due) {
		t.Errorf("cancelled wait %+v (due %v)", wt, due)
	}
	evs, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != worlds.EventWaitCompleted || last.Reason != worlds.WaitCancelled {
		t.Errorf("log ends with %+v, want wait_completed with reason %q", last, worlds.WaitCancelled)
	}
	for _, reason := range []string{"", worlds.WaitCancelled} {
		_, err := w.Append(c, runID, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "timer", Reason: reason})
		wantErr(t, err, worlds.ErrConflict, worlds.ErrWaitCompleted)
	}
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "other", Reason: worlds.WaitCancelled})
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrWaitNotFound)
	if r, err := w.GetRun(c, runID); err != nil || r.EventCount != 4 {
		t.Errorf("rejected events changed the run: %+v, %v", r, err)
	}
}

// cancelDelivery: a World that is a [worlds.DeliveryCanceller] withdraws pending
// deliveries and leaves running ones alone.
func (s *suite) cancelDelivery(t *testing.T) {
	if _, ok := s.shared.(worlds.DeliveryCanceller); !ok {
		t.Skipf("%T is not a worlds.DeliveryCanceller", s.shared)
	}
	r := newRecorder(s.now)
	busy := uid(t, "busy")
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.fail = func(d worlds.Delivery) error {
		if d.ID != busy || d.Attempt != 1 {
			return nil
		}
		close(started)
		<-release
		return errors.New("worldtest: fail the attempt that was running when cancelled")
	}
	w := s.serve(t, r)
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before serve stops: Serve waits for Run
	dc, ok := w.(worlds.DeliveryCanceller)
	if !ok {
		t.Fatalf("%T is not a worlds.DeliveryCanceller, unlike the World of the shared tests", w)
	}
	c := ctx(t)
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "worldtest", RunID: uid(t, "run")}
	queue := func(id string, due time.Time) {
		t.Helper()
		if got, err := w.Queue(c, in, worlds.QueueOptions{ID: id, DueAt: due}); err != nil || got != id {
			t.Fatalf("Queue(%s) = %q, %v", id, got, err)
		}
	}
	cancel := func(id string) {
		t.Helper()
		if err := dc.CancelDelivery(c, id); err != nil {
			t.Fatalf("CancelDelivery(%s): %v", id, err)
		}
	}

	// A timer's wake-up an hour ahead (a schedule, on Worlds that have one), one due
	// in a second (a delayed message), and one cancelled then queued again under its
	// ID, which is delivered once.
	far, soon, again := uid(t, "wake-x"), uid(t, "wake-soon"), uid(t, "wake-again")
	queue(far, s.now().Add(time.Hour))
	queue(soon, s.now().Add(time.Second))
	queue(again, s.now().Add(time.Hour))
	for _, id := range []string{far, soon, again} {
		cancel(id)
	}
	cancel(far) // cancelling twice is no error
	cancel(uid(t, "never-queued"))
	if err := dc.CancelDelivery(c, ""); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("CancelDelivery(\"\") = %v, want ErrInvalidArgument", err)
	}
	queue(again, s.now().Add(time.Second))
	marker, err := w.Queue(c, in, worlds.QueueOptions{DueAt: s.now().Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}

	// A delivery a worker is executing is not withdrawn: it fails, and runs again.
	queue(busy, time.Time{})
	select {
	case <-started:
	case <-time.After(s.opts.timeout):
		t.Fatal("timed out waiting for the delivery to start")
	}
	cancel(busy)
	once.Do(func() { close(release) })

	s.waitFor(t, r, "the marker, the delivery queued again and the retry of the running one", func() bool {
		return len(r.byID(marker)) > 0 && len(r.byID(again)) > 0 && len(r.byID(busy)) >= 2
	})
	time.Sleep(300 * time.Millisecond)
	if n := len(r.byID(soon)); n != 0 {
		t.Errorf("cancelled delivery received %d times", n)
	}
	if n := len(r.byID(far)); n != 0 {
		t.Errorf("cancelled delivery due in 1h received %d times", n)
	}
	if n := len(r.byID(again)); n != 1 {
		t.Errorf("delivery cancelled and queued again received %d times, want once", n)
	}
	if got := r.byID(busy); got[1].d.Attempt != 2 {
		t.Errorf("retry of the running delivery has attempt %d, want 2", got[1].d.Attempt)
	}
}
