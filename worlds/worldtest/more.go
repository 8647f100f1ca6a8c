package worldtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

func (s *suite) paginationRuns(t *testing.T) {
	w := s.shared
	c := ctx(t)
	wf := uid(t, "wf")
	var ids []string
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("%s-%d", uid(t, "run"), i)
		appendOK(t, w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: wf})
		ids = append(ids, id)
		time.Sleep(2 * time.Millisecond) // distinct creation times, so newest-first is checkable
	}
	appendOK(t, w, ids[1], worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventRunCompleted})
	appendOK(t, w, ids[4], worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventRunCompleted})
	appendOK(t, w, ids[5], worlds.Event{Type: worlds.EventRunStarted})

	want := []string{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}
	s.eventually(t, func() string {
		if got := listRuns(t, w, worlds.RunFilter{WorkflowName: wf, Limit: 3}, 3); strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Sprintf("ListRuns(workflow) newest first = %v, want %v", got, want)
		}
		return ""
	})
	s.eventually(t, func() string {
		if got := listRuns(t, w, worlds.RunFilter{WorkflowName: wf, Status: worlds.RunCompleted, Limit: 1}, 1); strings.Join(got, ",") != ids[4]+","+ids[1] {
			return fmt.Sprintf("ListRuns(completed) = %v", got)
		}
		return ""
	})
	s.eventually(t, func() string {
		if got := listRuns(t, w, worlds.RunFilter{WorkflowName: wf, Status: worlds.RunPending}, 0); len(got) != 4 {
			return fmt.Sprintf("ListRuns(pending) = %v", got)
		}
		return ""
	})
	r2, err := w.GetRun(c, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	r5, err := w.GetRun(c, ids[5])
	if err != nil {
		t.Fatal(err)
	}
	s.eventually(t, func() string {
		got := listRuns(t, w, worlds.RunFilter{WorkflowName: wf, CreatedAfter: r2.CreatedAt, CreatedBefore: r5.CreatedAt, Limit: 1}, 1)
		if strings.Join(got, ",") != ids[4]+","+ids[3] {
			return fmt.Sprintf("ListRuns(created after run 2, before run 5) = %v, want runs 4, 3", got)
		}
		return ""
	})
	if _, err := w.ListRuns(c, worlds.RunFilter{Status: "sleeping"}); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("unknown status filter: %v", err)
	}
	// Unfiltered: every run of this test appears once, in newest-first order.
	page, err := w.ListRuns(c, worlds.RunFilter{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) == 0 || page.Cursor == "" {
		t.Fatalf("unfiltered first page: %d items, cursor %q", len(page.Items), page.Cursor)
	}
	for i := 1; i < len(page.Items); i++ {
		if page.Items[i].CreatedAt.After(page.Items[i-1].CreatedAt) {
			t.Errorf("unfiltered listing not newest first at %d", i)
		}
	}
}

// eventually re-runs check until it reports nothing, for listings, which a World
// may serve from an eventually consistent index; after the suite's timeout it
// fails with the last report.
func (s *suite) eventually(t *testing.T, check func() string) {
	t.Helper()
	deadline := time.Now().Add(s.opts.timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Error(msg)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listRuns pages through a listing and returns the run IDs, checking each page
// holds at most limit items and no run appears twice.
func listRuns(t *testing.T, w worlds.World, f worlds.RunFilter, limit int) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		p, err := w.ListRuns(ctx(t), f)
		if err != nil {
			t.Fatal(err)
		}
		if limit > 0 && len(p.Items) > limit {
			t.Fatalf("page of %d items, limit %d", len(p.Items), limit)
		}
		for _, r := range p.Items {
			if seen[r.RunID] {
				t.Fatalf("run %s listed twice", r.RunID)
			}
			if f.WorkflowName != "" && r.WorkflowName != f.WorkflowName || f.Status != "" && r.Status != f.Status || !worlds.MatchAttributes(r, f.Attributes) {
				t.Fatalf("run %+v does not match filter %+v", r, f)
			}
			seen[r.RunID] = true
			ids = append(ids, r.RunID)
		}
		if p.Cursor == "" {
			return ids
		}
		if pages > 100 {
			t.Fatal("listing does not end")
		}
		f.Cursor = p.Cursor
	}
}

func (s *suite) paginationLogs(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	for i := 0; i < 5; i++ {
		appendOK(t, w, runID, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("step-%d", 4-i), StepName: "s"})
		appendOK(t, w, runID, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: fmt.Sprintf("hook-%d-%s", i, runID), Token: uid(t, "tok")})
		time.Sleep(2 * time.Millisecond)
	}
	// Events: 12 in log order, 5 per page at most.
	var seqs []int64
	f := worlds.EventFilter{Limit: 5}
	for {
		p, err := w.ListEvents(c, runID, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 5 {
			t.Fatalf("page of %d events", len(p.Items))
		}
		for _, e := range p.Items {
			seqs = append(seqs, e.Seq)
		}
		if p.Cursor == "" {
			break
		}
		f.Cursor = p.Cursor
	}
	if len(seqs) != 12 {
		t.Fatalf("listed %d events, want 12", len(seqs))
	}
	for i, q := range seqs {
		if q != int64(i+1) {
			t.Fatalf("events out of order: %v", seqs)
		}
	}
	p, err := w.ListEvents(c, runID, worlds.EventFilter{AfterSeq: 9})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 3 || p.Items[0].Seq != 10 || p.Cursor != "" {
		t.Errorf("events after 9: %d items, first %+v", len(p.Items), p.Items)
	}

	// Steps: creation order, not ID order.
	var steps []string
	sf := worlds.ListFilter{Limit: 2}
	for {
		p, err := w.ListSteps(c, runID, sf)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 2 {
			t.Fatalf("page of %d steps", len(p.Items))
		}
		for _, st := range p.Items {
			steps = append(steps, st.StepID)
		}
		if p.Cursor == "" {
			break
		}
		sf.Cursor = p.Cursor
	}
	if strings.Join(steps, ",") != "step-4,step-3,step-2,step-1,step-0" {
		t.Errorf("steps in creation order = %v", steps)
	}

	// Hooks of the run: newest first.
	s.eventually(t, func() string {
		var hooks []string
		hf := worlds.HookFilter{RunID: runID, Limit: 2}
		for {
			p, err := w.ListHooks(c, hf)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Items) > 2 {
				t.Fatalf("page of %d hooks", len(p.Items))
			}
			for _, h := range p.Items {
				if h.RunID != runID {
					t.Fatalf("hook of run %s listed for %s", h.RunID, runID)
				}
				hooks = append(hooks, strings.TrimSuffix(h.HookID, "-"+runID))
			}
			if p.Cursor == "" {
				break
			}
			hf.Cursor = p.Cursor
		}
		if strings.Join(hooks, ",") != "hook-4,hook-3,hook-2,hook-1,hook-0" {
			return fmt.Sprintf("hooks newest first = %v", hooks)
		}
		return ""
	})
	all, err := w.ListHooks(c, worlds.HookFilter{Limit: 3})
	if err != nil || len(all.Items) == 0 {
		t.Errorf("ListHooks over every run: %d, %v", len(all.Items), err)
	}
}

func (s *suite) itemSize(t *testing.T) {
	w := s.shared
	max := w.Capabilities().MaxItemBytes
	if max <= 0 {
		t.Skip("World has no item size limit")
	}
	c := ctx(t)
	big := json.RawMessage(`"` + strings.Repeat("x", max) + `"`)
	runID := uid(t, "run")
	_, err := w.Append(c, runID, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "x", Input: big})
	wantErr(t, err, worlds.ErrEventInvalid)
	if _, err := w.GetRun(c, runID); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Errorf("oversized run_created stored a run: %v", err)
	}
	runID, _ = newRun(t, w)
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s", StepName: "s", Input: big})
	wantErr(t, err, worlds.ErrEventInvalid)
	if r, _ := w.GetRun(c, runID); r.EventCount != 2 {
		t.Errorf("oversized event stored: count %d", r.EventCount)
	}
	_, err = w.WriteStream(c, runID, "big", make([]byte, max+1))
	wantErr(t, err, worlds.ErrEventInvalid)
	// Well under the limit is fine.
	appendOK(t, w, runID, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s", StepName: "s", Input: json.RawMessage(`"` + strings.Repeat("x", max/4) + `"`)})
}

func (s *suite) streamWriteLimit(t *testing.T) {
	w := s.shared
	max := w.Capabilities().MaxStreamWrite
	if max <= 0 {
		t.Skip("World has no stream write limit")
	}
	c := ctx(t)
	runID, _ := newRun(t, w)
	chunks := make([][]byte, max+1)
	for i := range chunks {
		chunks[i] = []byte{byte(i)}
	}
	_, err := w.WriteStream(c, runID, "s", chunks...)
	wantErr(t, err, worlds.ErrEventInvalid, worlds.ErrTooManyChunks)
	if p, err := w.ReadStream(c, runID, "s", 0, 0); err == nil && len(p.Chunks) > 0 {
		t.Errorf("rejected write stored %d chunks", len(p.Chunks))
	}
	if first, err := w.WriteStream(c, runID, "s", chunks[:max]...); err != nil || first != 0 {
		t.Errorf("write of exactly MaxStreamWrite chunks = %d, %v", first, err)
	}
}

func (s *suite) queueValidation(t *testing.T) {
	w := s.shared
	c := ctx(t)
	for _, in := range []worlds.QueueInput{
		{Kind: "dance", RunID: "r", WorkflowName: "w"},
		{Kind: worlds.DeliverWorkflow, WorkflowName: "w"},
		{Kind: worlds.DeliverWorkflow, RunID: "r"},
		{Kind: worlds.DeliverStep, RunID: "r", WorkflowName: "w"},
	} {
		if _, err := w.Queue(c, in, worlds.QueueOptions{}); !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("Queue(%+v) = %v, want ErrInvalidArgument", in, err)
		}
	}
	if max := w.Capabilities().MaxDelay; max > 0 {
		in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, RunID: uid(t, "run"), WorkflowName: "w"}
		if _, err := w.Queue(c, in, worlds.QueueOptions{DueAt: s.now().Add(max + time.Hour), ID: uid(t, "d")}); err == nil {
			t.Errorf("Queue beyond MaxDelay %s accepted", max)
		}
	}
}

// received is what a recording runner saw.
type received struct {
	d  worlds.Delivery
	at time.Time // World clock at receipt
}

type recorder struct {
	now  func() time.Time
	fail func(d worlds.Delivery) error
	mu   sync.Mutex
	got  []received
	ch   chan struct{}
}

func newRecorder(now func() time.Time) *recorder {
	return &recorder{now: now, ch: make(chan struct{}, 1000)}
}

func (r *recorder) Workflows() []string { return []string{"worldtest"} }

func (r *recorder) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	r.mu.Lock()
	r.got = append(r.got, received{d: d, at: r.now()})
	r.mu.Unlock()
	r.ch <- struct{}{}
	if r.fail != nil {
		return r.fail(d)
	}
	return nil
}

func (r *recorder) byID(id string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, g := range r.got {
		if g.d.ID == id {
			out = append(out, g)
		}
	}
	return out
}

// waitFor waits until cond holds, re-checking after each delivery.
func (s *suite) waitFor(t *testing.T, r *recorder, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(s.opts.timeout)
	for !cond() {
		select {
		case <-r.ch:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// serve consumes the deliveries of a fresh World with r until the test ends.
func (s *suite) serve(t *testing.T, r worlds.Runner) worlds.World {
	t.Helper()
	w := s.newWorld(t)
	drive := s.opts.drive
	if srv, ok := w.(worlds.Server); ok && drive == nil {
		drive = func(ctx context.Context, _ worlds.World, r worlds.Runner) error { return srv.Serve(ctx, r) }
	}
	if drive == nil {
		t.Skip("World is not a worlds.Server and no WithDriver was given")
	}
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- drive(c, w, r) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	return w
}

func (s *suite) queueFixedID(t *testing.T) {
	r := newRecorder(s.now)
	w := s.serve(t, r)
	c := ctx(t)
	runID := uid(t, "run")
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "worldtest", RunID: runID}
	fixed := uid(t, "fixed")
	// Queued three times before it is due: delivered once.
	due := s.now().Add(500 * time.Millisecond)
	for i := 0; i < 3; i++ {
		id, err := w.Queue(c, in, worlds.QueueOptions{ID: fixed, DueAt: due})
		if err != nil || id != fixed {
			t.Fatalf("Queue with ID = %q, %v", id, err)
		}
	}
	marker, err := w.Queue(c, in, worlds.QueueOptions{DueAt: due.Add(200 * time.Millisecond)})
	if err != nil || marker == "" || marker == fixed {
		t.Fatalf("Queue without ID = %q, %v", marker, err)
	}
	s.waitFor(t, r, "both deliveries", func() bool { return len(r.byID(fixed)) > 0 && len(r.byID(marker)) > 0 })
	time.Sleep(300 * time.Millisecond)
	if got := r.byID(fixed); len(got) != 1 || got[0].d.Input.RunID != in.RunID || got[0].d.Input.Kind != in.Kind || got[0].d.Attempt != 1 {
		t.Errorf("fixed-ID delivery received %d times (%+v), want once", len(got), got)
	}
}

// queueItselfAgain serves a World whose first execution of a delivery with a
// fixed ID queues that delivery again under its ID and then returns outcome
// (nil: the execution succeeds), queues the delivery, and waits until it has
// run a second time.
func (s *suite) queueItselfAgain(t *testing.T, label string, outcome error) (*recorder, string, worlds.QueueInput) {
	r := newRecorder(s.now)
	fixed := uid(t, label)
	var (
		mu    sync.Mutex
		w     worlds.World
		first = true
	)
	r.fail = func(d worlds.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if d.ID != fixed || !first {
			return nil
		}
		first = false
		if _, err := w.Queue(context.Background(), d.Input, worlds.QueueOptions{ID: fixed}); err != nil {
			return err
		}
		return outcome
	}
	served := s.serve(t, r)
	mu.Lock()
	w = served
	mu.Unlock()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "worldtest", RunID: uid(t, "run")}
	if _, err := served.Queue(ctx(t), in, worlds.QueueOptions{ID: fixed}); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, r, "the execution queued by the one before it", func() bool { return len(r.byID(fixed)) >= 2 })
	return r, fixed, in
}

// queueAgainWhileRunning: a delivery that queues itself again under its ID and
// then fails runs again counted as a retry. The runtime re-queues what a failed
// execution may have left unqueued (a step it started inline) only for a retry,
// so a World that counts it as a first delivery can leave a run waiting for ever.
func (s *suite) queueAgainWhileRunning(t *testing.T) {
	r, fixed, _ := s.queueItselfAgain(t, "again", errors.New("worldtest: fail the execution that queued itself again"))
	if got := r.byID(fixed); got[0].d.Attempt != 1 || got[1].d.Attempt < 2 {
		t.Errorf("attempts %d, %d; want 1, then 2 or more: queueing a delivery again must not reset its count", got[0].d.Attempt, got[1].d.Attempt)
	}
}

// queueAgainWhileRunningRunsAgain checks the other half of the fixed-ID
// contract: a delivery queued again under its ID while it runs, by an
// execution that then succeeds, runs once more. The runtime re-arms a timer's
// wake-up that arrived early this way; a World that drops the second Queue
// call (the ID is still queued) or deletes the delivery on success leaves the
// run asleep for ever.
func (s *suite) queueAgainWhileRunningRunsAgain(t *testing.T) {
	r, fixed, in := s.queueItselfAgain(t, "rearm", nil)
	if got := r.byID(fixed); got[1].d.Input.RunID != in.RunID {
		t.Errorf("second execution's input %+v, want %+v", got[1].d.Input, in)
	}
}

func (s *suite) redelivery(t *testing.T) {
	r := newRecorder(s.now)
	var mu sync.Mutex
	failed := map[string]bool{}
	r.fail = func(d worlds.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if !failed[d.ID] {
			failed[d.ID] = true
			return errors.New("worldtest: fail the first attempt")
		}
		return nil
	}
	w := s.serve(t, r)
	in := worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: "worldtest", RunID: uid(t, "run"), StepID: "s1", Attempt: 3, Trace: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	id, err := w.Queue(ctx(t), in, worlds.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, r, "redelivery after a failure", func() bool { return len(r.byID(id)) >= 2 })
	got := r.byID(id)
	if got[0].d.Attempt != 1 || got[1].d.Attempt != 2 {
		t.Errorf("attempts %d, %d; want 1, 2", got[0].d.Attempt, got[1].d.Attempt)
	}
	if got[1].d.Input.StepID != "s1" || got[1].d.Input.Attempt != 3 || got[1].d.Input.Trace["traceparent"] == "" || got[1].d.Input.RunID != in.RunID {
		t.Errorf("redelivered input %+v", got[1].d.Input)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(r.byID(id)); n != 2 {
		t.Errorf("acknowledged delivery received %d times", n)
	}
}

func (s *suite) earlyArrival(t *testing.T) {
	r := newRecorder(s.now)
	w := s.serve(t, r)
	c := ctx(t)
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "worldtest", RunID: uid(t, "run")}
	far, err := w.Queue(c, in, worlds.QueueOptions{DueAt: s.now().Add(1000 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	due := s.now().Add(time.Second)
	soon, err := w.Queue(c, in, worlds.QueueOptions{DueAt: due})
	if err != nil {
		t.Fatal(err)
	}
	now, err := w.Queue(c, in, worlds.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, r, "the delayed delivery", func() bool { return len(r.byID(soon)) > 0 })
	if got := r.byID(soon)[0]; got.at.Before(due) {
		t.Errorf("delivery due %v arrived early at %v", due, got.at)
	}
	if len(r.byID(now)) != 1 {
		t.Errorf("immediate delivery received %d times", len(r.byID(now)))
	}
	if n := len(r.byID(far)); n != 0 {
		t.Errorf("delivery due in 1000h received %d times", n)
	}
}

func (s *suite) retention(t *testing.T) {
	probe := s.shared
	if !probe.Capabilities().Retention {
		t.Skip("World has no retention")
	}
	if s.opts.retention <= 0 {
		t.Fatal("Capabilities.Retention is set: pass worldtest.WithRetention with the configured retention")
	}
	if s.opts.advance == nil && s.opts.retention > 5*time.Second {
		t.Skipf("retention %s is too long to wait for without WithClock", s.opts.retention)
	}
	r := newRecorder(s.now)
	w := s.serve(t, r)
	c := ctx(t)
	done, _ := newRun(t, w)
	token := uid(t, "tok")
	appendOK(t, w, done,
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s", StepName: "s"},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h-" + done, Token: token})
	if _, err := w.WriteStream(c, done, "out", []byte("x")); err != nil {
		t.Fatal(err)
	}
	appendOK(t, w, done, worlds.Event{Type: worlds.EventRunCompleted})
	alive, _ := newRun(t, w)

	if s.opts.advance != nil {
		s.opts.advance(s.opts.retention + time.Second)
	} else {
		time.Sleep(s.opts.retention)
	}
	deadline := time.Now().Add(s.opts.timeout)
	for {
		_, err := w.GetRun(c, done)
		if errors.Is(err, worlds.ErrRunNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("finished run not deleted %s after its retention", s.opts.timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := w.ListEvents(c, done, worlds.EventFilter{}); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Errorf("events of an expired run: %v", err)
	}
	if _, err := w.GetHook(c, "h-"+done); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("hook of an expired run: %v", err)
	}
	if _, err := w.GetStep(c, done, "s"); !errors.Is(err, worlds.ErrNotFound) {
		t.Errorf("step of an expired run: %v", err)
	}
	if _, err := w.ReadStream(c, done, "out", 0, 0); !errors.Is(err, worlds.ErrNotFound) {
		t.Errorf("stream of an expired run: %v", err)
	}
	if _, err := w.GetRun(c, alive); err != nil {
		t.Errorf("running run expired: %v", err)
	}
	// The token is free again.
	other, _ := newRun(t, w)
	if out := appendOK(t, w, other, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h-" + other, Token: token}); out[0].Type != worlds.EventHookCreated {
		t.Errorf("token of an expired run not released: %s", out[0].Type)
	}
	r.mu.Lock()
	n := len(r.got)
	r.mu.Unlock()
	if n != 0 {
		t.Errorf("expiry went to the runner (%d deliveries): the World handles it", n)
	}
}
