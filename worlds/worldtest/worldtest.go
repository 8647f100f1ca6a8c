package worldtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Run runs the conformance suite. newWorld returns a World for one test; the suite
// calls it once for the tests that share a World (they use unique run IDs and
// workflow names and run in parallel) and once more for each test that consumes
// deliveries, since consuming takes every delivery of the World.
func Run(t *testing.T, newWorld func(t *testing.T) worlds.World, opts ...Option) {
	o := options{now: time.Now, timeout: 20 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	s := &suite{opts: o, newWorld: newWorld, shared: newWorld(t)}
	// Tests that move the clock run first and alone: parallel tests start after them.
	t.Run("Retention", s.retention)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"EventTypes", s.eventTypes},
		{"StepHeartbeats", s.stepHeartbeats},
		{"InvalidTransitions", s.invalidTransitions},
		{"InvalidEvents", s.invalidEvents},
		{"BatchIsAtomic", s.batchAtomic},
		{"NotFound", s.notFound},
		{"ConcurrentAppends", s.concurrentAppends},
		{"Waits", s.waits},
		{"CancelledWaits", s.cancelledWaits},
		{"BlockedRuns", s.blockedRuns},
		{"Hooks", s.hooks},
		{"Streams", s.streams},
		{"LiveStreams", s.liveStreams},
		{"Cancellation", s.cancellation},
		{"PaginationRuns", s.paginationRuns},
		{"AttributeFilters", s.attributeFilters},
		{"PaginationEventsStepsHooks", s.paginationLogs},
		{"ItemSizeLimit", s.itemSize},
		{"StreamWriteLimit", s.streamWriteLimit},
		{"QueueValidation", s.queueValidation},
		{"QueueFixedIDOnce", s.queueFixedID},
		{"Redelivery", s.redelivery},
		{"QueueAgainWhileRunning", s.queueAgainWhileRunning},
		{"QueueAgainWhileRunningRunsAgain", s.queueAgainWhileRunningRunsAgain},
		{"EarlyArrival", s.earlyArrival},
		{"CancelDelivery", s.cancelDelivery},
		{"Reset", s.reset},
		{"StartRetried", s.startRetried},
		{"AppendAndQueue", s.appendQueue},
		{"EagerStart", s.eagerStart},
		{"Signals", s.signals},
		{"SignalWithStart", s.signalWithStart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type suite struct {
	opts     options
	newWorld func(t *testing.T) worlds.World
	shared   worlds.World
}

func (s *suite) now() time.Time { return s.opts.now() }

// uid returns a name unique to this test and call.
func uid(t *testing.T, prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return prefix + "-" + name + "-" + hex.EncodeToString(b[:])
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func appendOK(t *testing.T, w worlds.World, runID string, evs ...worlds.Event) []worlds.Event {
	t.Helper()
	out, err := w.Append(ctx(t), runID, evs...)
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", runID, types(evs), err)
	}
	if len(out) != len(evs) {
		t.Fatalf("Append returned %d events for %d", len(out), len(evs))
	}
	return out
}

func types(evs []worlds.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, string(e.Type))
	}
	return strings.Join(s, ",")
}

// newRun creates and starts a run of a workflow unique to the test.
func newRun(t *testing.T, w worlds.World) (runID, workflow string) {
	t.Helper()
	runID, workflow = uid(t, "run"), uid(t, "wf")
	appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: workflow, Input: json.RawMessage(`{"n":1}`)},
		worlds.Event{Type: worlds.EventRunStarted})
	return runID, workflow
}

func wantErr(t *testing.T, err error, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %q does not match %q", err, target)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func (s *suite) eventTypes(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, wf := uid(t, "run"), uid(t, "wf")
	past := s.now().Add(-time.Second)
	token := uid(t, "tok")
	all := []worlds.Event{
		{Type: worlds.EventRunCreated, WorkflowName: wf, Input: json.RawMessage(`{"order":7}`), Attributes: map[string]string{"a": "1"}},
		{Type: worlds.EventRunStarted},
		{Type: worlds.EventAttributesSet, Attributes: map[string]string{"b": "2"}},
		{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "charge", Input: json.RawMessage(`[1]`)},
		{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1},
		{Type: worlds.EventStepRetrying, CorrelationID: "s1", Error: &worlds.ErrorInfo{Message: "flaky"}, RetryAt: &past},
		{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 2},
		{Type: worlds.EventStepCompleted, CorrelationID: "s1", Output: json.RawMessage(`"ok"`)},
		{Type: worlds.EventStepCreated, CorrelationID: "s2", StepName: "ship"},
		{Type: worlds.EventStepStarted, CorrelationID: "s2", Attempt: 1},
		{Type: worlds.EventStepFailed, CorrelationID: "s2", Error: &worlds.ErrorInfo{Message: "no stock", Fatal: true}},
		{Type: worlds.EventHookCreated, CorrelationID: "h1-" + runID, Token: token, Metadata: json.RawMessage(`{"m":1}`)},
		{Type: worlds.EventHookConflict, CorrelationID: "h2-" + runID, Token: token},
		{Type: worlds.EventHookReceived, CorrelationID: "h1-" + runID, Payload: json.RawMessage(`{"ok":true}`)},
		{Type: worlds.EventHookDisposed, CorrelationID: "h1-" + runID},
		{Type: worlds.EventWaitCreated, CorrelationID: "w1", ResumeAt: &past},
		{Type: worlds.EventWaitCompleted, CorrelationID: "w1"},
		{Type: worlds.EventRunBlocked, Error: &worlds.ErrorInfo{Message: "workflow: panic: boom", Type: "panic", Stack: "goroutine 1"}},
		{Type: worlds.EventRunUnblocked},
		{Type: worlds.EventSignalReceived, CorrelationID: "approve", Payload: json.RawMessage(`{"by":"ana"}`)},
		{Type: worlds.EventRunCompleted, Output: json.RawMessage(`{"done":true}`)},
	}
	seen := map[worlds.EventType]bool{}
	// One event per append, to exercise the guarded single write, except a batch in the middle.
	var stored []worlds.Event
	for i := 0; i < len(all); {
		n := 1
		if i == 3 {
			n = 5
		}
		stored = append(stored, appendOK(t, w, runID, all[i:i+n]...)...)
		i += n
	}
	for i, e := range stored {
		seen[e.Type] = true
		if e.Seq != int64(i+1) || e.RunID != runID || e.CreatedAt.IsZero() || e.Type != all[i].Type {
			t.Fatalf("stored event %d = seq %d run %q type %s createdAt %v", i, e.Seq, e.RunID, e.Type, e.CreatedAt)
		}
	}
	for _, typ := range worlds.EventTypes {
		// run_failed, run_cancelled and step_heartbeat have tests of their own.
		if !seen[typ] && typ != worlds.EventRunFailed && typ != worlds.EventRunCancelled && typ != worlds.EventStepHeartbeat {
			t.Errorf("event type %s not covered", typ)
		}
	}
	logged, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(all) {
		t.Fatalf("log has %d events, want %d", len(logged), len(all))
	}
	for i := range logged {
		if logged[i].Seq != stored[i].Seq || logged[i].Type != stored[i].Type || logged[i].CorrelationID != stored[i].CorrelationID {
			t.Fatalf("log[%d] = %+v, appended %+v", i, logged[i], stored[i])
		}
	}
	if string(logged[0].Input) != `{"order":7}` || logged[13].Payload == nil || string(logged[11].Metadata) != `{"m":1}` {
		t.Errorf("payloads not stored: input %s payload %s metadata %s", logged[0].Input, logged[13].Payload, logged[11].Metadata)
	}

	run, err := w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != worlds.RunCompleted || run.WorkflowName != wf || string(run.Output) != `{"done":true}` ||
		run.EventCount != int64(len(all)) || run.Attributes["a"] != "1" || run.Attributes["b"] != "2" ||
		run.StartedAt == nil || run.CompletedAt == nil {
		t.Errorf("run view %+v", run)
	}
	s1, err := w.GetStep(c, runID, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if s1.Status != worlds.StepCompleted || s1.Attempt != 2 || string(s1.Output) != `"ok"` || s1.StepName != "charge" || s1.CompletedAt == nil {
		t.Errorf("step s1 %+v", s1)
	}
	s2, err := w.GetStep(c, runID, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if s2.Status != worlds.StepFailed || s2.Error == nil || !s2.Error.Fatal {
		t.Errorf("step s2 %+v", s2)
	}
	h, err := w.GetHook(c, "h1-"+runID)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != worlds.HookDisposed || h.Received != 1 || h.Token != token || h.WorkflowName != wf || h.DisposedAt == nil {
		t.Errorf("hook %+v", h)
	}
	if _, err := w.GetHook(c, "h2-"+runID); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("conflicting hook stored as a hook: %v", err)
	}
	wt, err := w.GetWait(c, runID, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Status != worlds.WaitCompleted || wt.CompletedAt == nil || !wt.ResumeAt.Equal(past) {
		t.Errorf("wait %+v (resume %v)", wt, past)
	}

	failed, _ := newRun(t, w)
	out := appendOK(t, w, failed, worlds.Event{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{Message: "boom", Type: "*errors.errorString"}})
	if out[0].Seq != 3 {
		t.Errorf("run_failed seq %d", out[0].Seq)
	}
	if r, err := w.GetRun(c, failed); err != nil || r.Status != worlds.RunFailed || r.Error == nil || r.Error.Message != "boom" {
		t.Errorf("failed run %+v, %v", r, err)
	}
}

// stepHeartbeats checks the heartbeat projection of a step: step_started sets
// the attempt's timeout and deadline base, step_heartbeat moves the base and
// keeps its details, which outlive the attempt for the next one to read.
func (s *suite) stepHeartbeats(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	past := s.now().Add(-time.Second)
	appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "copy"},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1, HeartbeatTimeout: 30 * time.Second})
	st, err := w.GetStep(c, runID, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if st.HeartbeatTimeout != 30*time.Second || st.HeartbeatAt == nil || st.HeartbeatDetails != nil {
		t.Fatalf("started step %+v: want the timeout and a deadline base, no details", st)
	}
	base := *st.HeartbeatAt
	out := appendOK(t, w, runID, worlds.Event{Type: worlds.EventStepHeartbeat, CorrelationID: "s1", Attempt: 1, Payload: json.RawMessage(`{"copied":40}`)})
	if out[0].Type != worlds.EventStepHeartbeat || string(out[0].Payload) != `{"copied":40}` {
		t.Fatalf("stored heartbeat %+v", out[0])
	}
	// A heartbeat without details keeps the last ones.
	appendOK(t, w, runID, worlds.Event{Type: worlds.EventStepHeartbeat, CorrelationID: "s1", Attempt: 1})
	st, err = w.GetStep(c, runID, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if st.HeartbeatAt == nil || st.HeartbeatAt.Before(base) || string(st.HeartbeatDetails) != `{"copied":40}` || st.Status != worlds.StepRunning {
		t.Fatalf("step after heartbeats %+v", st)
	}
	appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: "s1", Attempt: 1, Error: &worlds.ErrorInfo{Message: "no heartbeat", Type: "cairn.HeartbeatTimeout"}, RetryAt: &past},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 2})
	st, err = w.GetStep(c, runID, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempt != 2 || st.HeartbeatTimeout != 0 || st.HeartbeatAt != nil || string(st.HeartbeatDetails) != `{"copied":40}` ||
		st.Error == nil || st.Error.Type != "cairn.HeartbeatTimeout" {
		t.Fatalf("second attempt %+v: want no timeout, the first attempt's details and its error", st)
	}
	logged, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	if got := types(logged); !strings.Contains(got, "step_started,step_heartbeat,step_heartbeat,step_retrying") {
		t.Fatalf("log %s", got)
	}
	for _, ev := range logged {
		if ev.Type == worlds.EventStepStarted && ev.Attempt == 1 && ev.HeartbeatTimeout != 30*time.Second {
			t.Fatalf("step_started lost its heartbeat timeout: %+v", ev)
		}
	}
}

type transitionCase struct {
	name  string
	setup []worlds.Event
	event worlds.Event
	kind  error
	cause error
}

func (s *suite) invalidTransitions(t *testing.T) {
	w := s.shared
	future := s.now().Add(1000 * time.Hour)
	past := s.now().Add(-time.Second)
	step := func(typ worlds.EventType) worlds.Event {
		e := worlds.Event{Type: typ, CorrelationID: "s"}
		switch typ {
		case worlds.EventStepCreated:
			e.StepName = "x"
		case worlds.EventStepStarted:
			e.Attempt = 1
		case worlds.EventStepFailed:
			e.Error = &worlds.ErrorInfo{Message: "x"}
		case worlds.EventStepRetrying:
			e.Error, e.RetryAt = &worlds.ErrorInfo{Message: "x"}, &future
		}
		return e
	}
	started := func(n int) worlds.Event { e := step(worlds.EventStepStarted); e.Attempt = n; return e }
	beat := func(n int) worlds.Event {
		return worlds.Event{Type: worlds.EventStepHeartbeat, CorrelationID: "s", Attempt: n}
	}
	ended := func(typ worlds.EventType, n int) worlds.Event {
		e := step(typ)
		e.Attempt = n
		if typ == worlds.EventStepRetrying {
			e.RetryAt = &past
		}
		return e
	}
	cases := []transitionCase{
		{"run created twice", nil, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "x"}, worlds.ErrConflict, worlds.ErrRunExists},
		{"run started twice", nil, worlds.Event{Type: worlds.EventRunStarted}, worlds.ErrConflict, worlds.ErrRunStarted},
		{"after completed", []worlds.Event{{Type: worlds.EventRunCompleted}}, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"a": "b"}}, worlds.ErrGone, worlds.ErrRunFinished},
		{"after failed", []worlds.Event{{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{Message: "x"}}}, step(worlds.EventStepCreated), worlds.ErrGone, worlds.ErrRunFinished},
		{"after cancelled", []worlds.Event{{Type: worlds.EventRunCancelled}}, worlds.Event{Type: worlds.EventRunCompleted}, worlds.ErrGone, worlds.ErrRunFinished},
		{"step created twice", []worlds.Event{step(worlds.EventStepCreated)}, step(worlds.EventStepCreated), worlds.ErrConflict, worlds.ErrStepExists},
		{"unknown step started", nil, step(worlds.EventStepStarted), worlds.ErrNotFound, worlds.ErrStepNotFound},
		{"unknown step completed", nil, step(worlds.EventStepCompleted), worlds.ErrNotFound, worlds.ErrStepNotFound},
		{"completed before started", []worlds.Event{step(worlds.EventStepCreated)}, step(worlds.EventStepCompleted), worlds.ErrConflict, worlds.ErrStepNotRunning},
		{"retrying before started", []worlds.Event{step(worlds.EventStepCreated)}, step(worlds.EventStepRetrying), worlds.ErrConflict, worlds.ErrStepNotRunning},
		{"step completed twice", []worlds.Event{step(worlds.EventStepCreated), started(1), step(worlds.EventStepCompleted)}, step(worlds.EventStepCompleted), worlds.ErrConflict, worlds.ErrStepFinished},
		{"started after failed", []worlds.Event{step(worlds.EventStepCreated), started(1), step(worlds.EventStepFailed)}, started(2), worlds.ErrConflict, worlds.ErrStepFinished},
		{"attempt skipped", []worlds.Event{step(worlds.EventStepCreated)}, started(2), worlds.ErrConflict, worlds.ErrStaleAttempt},
		{"attempt repeated", []worlds.Event{step(worlds.EventStepCreated), started(1)}, started(1), worlds.ErrConflict, worlds.ErrStaleAttempt},
		{"heartbeat before started", []worlds.Event{step(worlds.EventStepCreated)}, beat(1), worlds.ErrConflict, worlds.ErrStepNotRunning},
		{"heartbeat of an earlier attempt", []worlds.Event{step(worlds.EventStepCreated), started(1), ended(worlds.EventStepRetrying, 1), started(2)}, beat(1), worlds.ErrConflict, worlds.ErrStaleAttempt},
		{"heartbeat after completed", []worlds.Event{step(worlds.EventStepCreated), started(1), step(worlds.EventStepCompleted)}, beat(1), worlds.ErrConflict, worlds.ErrStepFinished},
		{"retrying an earlier attempt", []worlds.Event{step(worlds.EventStepCreated), started(1), ended(worlds.EventStepRetrying, 1), started(2)}, ended(worlds.EventStepRetrying, 1), worlds.ErrConflict, worlds.ErrStaleAttempt},
		{"failing an earlier attempt", []worlds.Event{step(worlds.EventStepCreated), started(1), ended(worlds.EventStepRetrying, 1), started(2)}, ended(worlds.EventStepFailed, 1), worlds.ErrConflict, worlds.ErrStaleAttempt},
		{"retry before due", []worlds.Event{step(worlds.EventStepCreated), started(1), step(worlds.EventStepRetrying)}, started(2), worlds.ErrTooEarly, worlds.ErrRetryNotDue},
		{"hook created twice", []worlds.Event{{Type: worlds.EventHookCreated, CorrelationID: "h", Token: "HOOKTOKEN"}}, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h", Token: "HOOKTOKEN2"}, worlds.ErrConflict, worlds.ErrHookExists},
		{"unknown hook received", nil, worlds.Event{Type: worlds.EventHookReceived, CorrelationID: "h"}, worlds.ErrNotFound, worlds.ErrHookNotFound},
		{"unknown hook disposed", nil, worlds.Event{Type: worlds.EventHookDisposed, CorrelationID: "h"}, worlds.ErrNotFound, worlds.ErrHookNotFound},
		{"received after disposed", []worlds.Event{{Type: worlds.EventHookCreated, CorrelationID: "h", Token: "HOOKTOKEN"}, {Type: worlds.EventHookDisposed, CorrelationID: "h"}}, worlds.Event{Type: worlds.EventHookReceived, CorrelationID: "h"}, worlds.ErrGone, worlds.ErrHookDisposed},
		{"disposed twice", []worlds.Event{{Type: worlds.EventHookCreated, CorrelationID: "h", Token: "HOOKTOKEN"}, {Type: worlds.EventHookDisposed, CorrelationID: "h"}}, worlds.Event{Type: worlds.EventHookDisposed, CorrelationID: "h"}, worlds.ErrGone, worlds.ErrHookDisposed},
		{"wait created twice", []worlds.Event{{Type: worlds.EventWaitCreated, CorrelationID: "w", ResumeAt: &past}}, worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "w", ResumeAt: &past}, worlds.ErrConflict, worlds.ErrWaitExists},
		{"unknown wait completed", nil, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "w"}, worlds.ErrNotFound, worlds.ErrWaitNotFound},
		{"wait completed twice", []worlds.Event{{Type: worlds.EventWaitCreated, CorrelationID: "w", ResumeAt: &past}, {Type: worlds.EventWaitCompleted, CorrelationID: "w"}}, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "w"}, worlds.ErrConflict, worlds.ErrWaitCompleted},
		{"wait completed too early", []worlds.Event{{Type: worlds.EventWaitCreated, CorrelationID: "w", ResumeAt: &future}}, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "w"}, worlds.ErrTooEarly, worlds.ErrWaitNotDue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runID, _ := newRun(t, w)
			// Hook IDs and tokens are global: make them unique to the run.
			fix := func(e worlds.Event) worlds.Event {
				if strings.HasPrefix(string(e.Type), "hook_") {
					e.CorrelationID += "-" + runID
					if e.Token != "" {
						e.Token += "-" + runID
					}
				}
				return e
			}
			for _, e := range tc.setup {
				appendOK(t, w, runID, fix(e))
			}
			before, err := w.GetRun(ctx(t), runID)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Append(ctx(t), runID, fix(tc.event))
			wantErr(t, err, tc.kind, tc.cause)
			var ee *worlds.EventError
			if !errors.As(err, &ee) || ee.Type != tc.event.Type {
				t.Errorf("error %v is not an *EventError for %s", err, tc.event.Type)
			}
			after, err := w.GetRun(ctx(t), runID)
			if err != nil {
				t.Fatal(err)
			}
			if after.EventCount != before.EventCount {
				t.Errorf("rejected event changed the event count from %d to %d", before.EventCount, after.EventCount)
			}
		})
	}
	t.Run("unknown run", func(t *testing.T) {
		t.Parallel()
		_, err := w.Append(ctx(t), uid(t, "missing"), worlds.Event{Type: worlds.EventRunStarted})
		wantErr(t, err, worlds.ErrNotFound, worlds.ErrRunNotFound)
	})
}

func (s *suite) invalidEvents(t *testing.T) {
	w := s.shared
	runID, _ := newRun(t, w)
	for _, tc := range []struct {
		name  string
		event worlds.Event
		field string
	}{
		{"unknown type", worlds.Event{Type: "run_exploded"}, "type"},
		{"missing correlation", worlds.Event{Type: worlds.EventStepCreated, StepName: "x"}, "correlationId"},
		{"stray correlation", worlds.Event{Type: worlds.EventRunCompleted, CorrelationID: "x"}, "correlationId"},
		{"bad JSON", worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s", StepName: "x", Input: json.RawMessage(`{`)}, "input"},
		{"no error", worlds.Event{Type: worlds.EventRunFailed}, "error"},
		{"no retryAt", worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: "s", Error: &worlds.ErrorInfo{Message: "x"}}, "retryAt"},
		{"attempt 0", worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s"}, "attempt"},
		{"heartbeat attempt 0", worlds.Event{Type: worlds.EventStepHeartbeat, CorrelationID: "s"}, "attempt"},
		{"negative heartbeat timeout", worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s", Attempt: 1, HeartbeatTimeout: -time.Second}, "heartbeatTimeout"},
		{"bad error details", worlds.Event{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{Message: "x", Details: json.RawMessage(`{`)}}, "error.details"},
		{"no token", worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h"}, "token"},
		{"long token", worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h", Token: strings.Repeat("t", worlds.MaxTokenLength+1)}, "token"},
		{"no resumeAt", worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "w"}, "resumeAt"},
		{"no attributes", worlds.Event{Type: worlds.EventAttributesSet}, "attributes"},
		{"unknown wait reason", worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "w", Reason: "bogus"}, "reason"},
		{"no workflow", worlds.Event{Type: worlds.EventRunCreated}, "workflowName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := runID
			if tc.event.Type == worlds.EventRunCreated {
				id = uid(t, "run")
			}
			_, err := w.Append(ctx(t), id, tc.event)
			wantErr(t, err, worlds.ErrEventInvalid)
			var ee *worlds.EventError
			if !errors.As(err, &ee) || ee.Field != tc.field {
				t.Errorf("error %v: want *EventError naming field %q", err, tc.field)
			}
		})
	}
	if _, err := w.Append(ctx(t), runID); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Errorf("empty append: %v, want ErrInvalidArgument", err)
	}
	if r, err := w.GetRun(ctx(t), runID); err != nil || r.EventCount != 2 {
		t.Errorf("invalid events were stored: %+v %v", r, err)
	}
}

func (s *suite) batchAtomic(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	_, err := w.Append(c, runID,
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "a", StepName: "a"},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h-" + runID, Token: uid(t, "tok")},
		worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "a"}) // not started
	wantErr(t, err, worlds.ErrConflict, worlds.ErrStepNotRunning)
	if r, _ := w.GetRun(c, runID); r.EventCount != 2 {
		t.Errorf("half a batch stored: event count %d", r.EventCount)
	}
	if _, err := w.GetStep(c, runID, "a"); !errors.Is(err, worlds.ErrStepNotFound) {
		t.Errorf("step of a rejected batch stored: %v", err)
	}
	if _, err := w.GetHook(c, "h-"+runID); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("hook of a rejected batch stored: %v", err)
	}
	// Later events of a batch see the earlier ones.
	out := appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "a", StepName: "a"},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "a", Attempt: 1},
		worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "a", Output: json.RawMessage(`1`)})
	if out[2].Seq != 5 {
		t.Errorf("batch seqs %d..%d", out[0].Seq, out[2].Seq)
	}
	// A run created and started in one batch.
	other := uid(t, "run")
	appendOK(t, w, other, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "x"}, worlds.Event{Type: worlds.EventRunStarted})
	if r, err := w.GetRun(c, other); err != nil || r.Status != worlds.RunRunning {
		t.Errorf("run %+v %v", r, err)
	}
}

func (s *suite) notFound(t *testing.T) {
	w := s.shared
	c := ctx(t)
	missing := uid(t, "missing")
	_, err := w.GetRun(c, missing)
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrRunNotFound)
	_, err = w.ListEvents(c, missing, worlds.EventFilter{})
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrRunNotFound)
	_, err = w.GetHook(c, missing)
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrHookNotFound)
	_, err = w.GetHookByToken(c, missing)
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrHookNotFound)
	runID, _ := newRun(t, w)
	_, err = w.GetStep(c, runID, "nope")
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrStepNotFound)
	_, err = w.GetWait(c, runID, "nope")
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrWaitNotFound)
	_, err = w.ListEvents(c, runID, worlds.EventFilter{Limit: -1})
	wantErr(t, err, worlds.ErrInvalidArgument)
	_, err = w.ListRuns(c, worlds.RunFilter{Cursor: "not a cursor!"})
	wantErr(t, err, worlds.ErrInvalidArgument)
}

func (s *suite) concurrentAppends(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	const writers, each = 16, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ev := worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("w%02d-%02d", g, i), StepName: "s"}
				for try := 0; ; try++ {
					out, err := w.Append(c, runID, ev)
					if errors.Is(err, worlds.ErrAppendContention) && try < 100 {
						continue // not stored: try again
					}
					if err != nil {
						errs <- err
						return
					}
					if len(out) != 1 || out[0].CorrelationID != ev.CorrelationID {
						errs <- fmt.Errorf("append returned %+v", out)
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs, err := worlds.AllEvents(c, w, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2+writers*each {
		t.Fatalf("log has %d events, want %d", len(evs), 2+writers*each)
	}
	next := map[int]int{}
	seen := map[string]bool{}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log is not contiguous", i, e.Seq)
		}
		if i < 2 {
			continue
		}
		if seen[e.CorrelationID] {
			t.Fatalf("event %s stored twice", e.CorrelationID)
		}
		seen[e.CorrelationID] = true
		var g, n int
		if _, err := fmt.Sscanf(e.CorrelationID, "w%02d-%02d", &g, &n); err != nil {
			t.Fatal(err)
		}
		if n != next[g] {
			t.Fatalf("writer %d: event %d stored where %d was due: reordered", g, n, next[g])
		}
		next[g]++
	}
	if r, _ := w.GetRun(c, runID); r.EventCount != int64(len(evs)) {
		t.Errorf("run event count %d, log %d", r.EventCount, len(evs))
	}
}

func (s *suite) waits(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	later := s.now().Add(1000 * time.Hour)
	soon := s.now().Add(300 * time.Millisecond)
	appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "long", ResumeAt: &later},
		worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "short", ResumeAt: &soon})
	wt, err := w.GetWait(c, runID, "long")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Status != worlds.WaitWaiting || !wt.ResumeAt.Equal(later) || wt.CompletedAt != nil {
		t.Errorf("wait %+v", wt)
	}
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "long"})
	wantErr(t, err, worlds.ErrTooEarly, worlds.ErrWaitNotDue)
	for s.now().Before(soon) {
		time.Sleep(soon.Sub(s.now()) + 10*time.Millisecond)
	}
	appendOK(t, w, runID, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "short"})
	if wt, _ := w.GetWait(c, runID, "short"); wt.Status != worlds.WaitCompleted || wt.CompletedAt == nil {
		t.Errorf("short wait %+v", wt)
	}
}

func (s *suite) hooks(t *testing.T) {
	w := s.shared
	c := ctx(t)
	token := uid(t, "tok")
	runA, wfA := newRun(t, w)
	runB, _ := newRun(t, w)
	runC, _ := newRun(t, w)
	hA, hB, hC := "ha-"+runA, "hb-"+runB, "hc-"+runC

	out := appendOK(t, w, runA, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: hA, Token: token, Metadata: json.RawMessage(`{"who":"a"}`)})
	if out[0].Type != worlds.EventHookCreated {
		t.Fatalf("first hook stored as %s", out[0].Type)
	}
	out = appendOK(t, w, runB, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: hB, Token: token, Metadata: json.RawMessage(`{"who":"b"}`)})
	if out[0].Type != worlds.EventHookConflict || out[0].Token != token {
		t.Fatalf("hook with a taken token stored as %s, want hook_conflict", out[0].Type)
	}
	if evs, _ := worlds.AllEvents(c, w, runB); evs[len(evs)-1].Type != worlds.EventHookConflict {
		t.Errorf("log holds %s, want hook_conflict", evs[len(evs)-1].Type)
	}
	if _, err := w.GetHook(c, hB); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("conflicting hook is a hook: %v", err)
	}
	owner, err := w.GetHookByToken(c, token)
	if err != nil {
		t.Fatal(err)
	}
	if owner.HookID != hA || owner.RunID != runA || owner.WorkflowName != wfA || string(owner.Metadata) != `{"who":"a"}` {
		t.Errorf("token owner %+v", owner)
	}
	// ResumeHook appends hook_received and queues a wake-up for the run.
	rc, err := worlds.ResumeHook(c, w, token, json.RawMessage(`{"approved":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if rc != (worlds.ResumeContext{RunID: runA, HookID: hA, WorkflowName: wfA}) {
		t.Errorf("resume context %+v", rc)
	}
	if h, _ := w.GetHook(c, hA); h.Received != 1 {
		t.Errorf("hook received %d", h.Received)
	}
	evs, _ := worlds.AllEvents(c, w, runA)
	if last := evs[len(evs)-1]; last.Type != worlds.EventHookReceived || string(last.Payload) != `{"approved":true}` {
		t.Errorf("last event %+v", last)
	}

	// Dispose releases the token for another hook.
	appendOK(t, w, runA, worlds.Event{Type: worlds.EventHookDisposed, CorrelationID: hA})
	if _, err := w.GetHookByToken(c, token); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("disposed hook still owns its token: %v", err)
	}
	if _, err := worlds.ResumeHook(c, w, token, nil); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("resume of a released token: %v", err)
	}
	out = appendOK(t, w, runC, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: hC, Token: token})
	if out[0].Type != worlds.EventHookCreated {
		t.Fatalf("hook on a released token stored as %s", out[0].Type)
	}
	if owner, err := w.GetHookByToken(c, token); err != nil || owner.HookID != hC {
		t.Errorf("token owner %+v %v", owner, err)
	}

	// The end of a run disposes its hooks and releases their tokens.
	second := uid(t, "tok")
	appendOK(t, w, runC, worlds.Event{Type: worlds.EventHookCreated, CorrelationID: hC + "-2", Token: second})
	appendOK(t, w, runC, worlds.Event{Type: worlds.EventRunCompleted})
	for _, id := range []string{hC, hC + "-2"} {
		h, err := w.GetHook(c, id)
		if err != nil {
			t.Fatal(err)
		}
		if h.Status != worlds.HookDisposed || h.DisposedAt == nil {
			t.Errorf("hook %s of a finished run: %+v", id, h)
		}
	}
	for _, tok := range []string{token, second} {
		if _, err := w.GetHookByToken(c, tok); !errors.Is(err, worlds.ErrHookNotFound) {
			t.Errorf("token of a finished run still owned: %v", err)
		}
	}
	s.eventually(t, func() string {
		page, err := w.ListHooks(c, worlds.HookFilter{RunID: runC})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 2 {
			return fmt.Sprintf("ListHooks(run C) = %d hooks, want 2", len(page.Items))
		}
		return ""
	})
	// A hook may claim a token its own run's disposed hook released, within one batch.
	runD, _ := newRun(t, w)
	third := uid(t, "tok")
	out = appendOK(t, w, runD,
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hd1-" + runD, Token: third},
		worlds.Event{Type: worlds.EventHookDisposed, CorrelationID: "hd1-" + runD},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hd2-" + runD, Token: third})
	if out[2].Type != worlds.EventHookCreated {
		t.Errorf("re-claim in one batch stored as %s", out[2].Type)
	}
	if owner, err := w.GetHookByToken(c, third); err != nil || owner.HookID != "hd2-"+runD {
		t.Errorf("token owner %+v %v", owner, err)
	}
}

func (s *suite) streams(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	first, err := w.WriteStream(c, runID, "out", []byte("a"), []byte("b"), []byte("c"))
	if err != nil || first != 0 {
		t.Fatalf("first write = %d, %v", first, err)
	}
	first, err = w.WriteStream(c, runID, "out", []byte("d"), []byte("e"))
	if err != nil || first != 3 {
		t.Fatalf("second write = %d, %v", first, err)
	}
	p, err := w.ReadStream(c, runID, "out", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Chunks) != 2 || string(p.Chunks[0].Data) != "a" || p.Chunks[1].Index != 1 || p.Next != 2 || p.Closed {
		t.Fatalf("page 1 %+v", p)
	}
	p, err = w.ReadStream(c, runID, "out", p.Next, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Chunks) != 3 || string(p.Chunks[2].Data) != "e" || p.Chunks[2].Index != 4 || p.Next != 5 || p.Closed {
		t.Fatalf("page 2 %+v", p)
	}
	if err := w.CloseStream(c, runID, "out"); err != nil {
		t.Fatal(err)
	}
	if err := w.CloseStream(c, runID, "out"); err != nil {
		t.Fatalf("closing twice: %v", err)
	}
	p, err = w.ReadStream(c, runID, "out", 5, 10)
	if err != nil || len(p.Chunks) != 0 || !p.Closed || p.Next != 5 {
		t.Fatalf("after close %+v, %v", p, err)
	}
	if p, _ := w.ReadStream(c, runID, "out", 3, 10); !p.Closed || len(p.Chunks) != 2 || p.Next != 5 {
		t.Errorf("reading the tail of a closed stream: %+v", p)
	}
	_, err = w.WriteStream(c, runID, "out", []byte("f"))
	wantErr(t, err, worlds.ErrGone, worlds.ErrStreamClosed)

	if err := w.CloseStream(c, runID, "empty"); err != nil {
		t.Fatal(err)
	}
	if p, err := w.ReadStream(c, runID, "empty", 0, 10); err != nil || !p.Closed || len(p.Chunks) != 0 {
		t.Errorf("closed empty stream %+v %v", p, err)
	}
	if _, err := w.ReadStream(c, runID, "never", 0, 10); !errors.Is(err, worlds.ErrStreamNotFound) {
		t.Errorf("read of an unknown stream: %v", err)
	}
	list, err := w.ListStreams(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "empty" || !list[0].Closed || list[1].Name != "out" || list[1].Chunks != 5 || !list[1].Closed {
		t.Errorf("streams %+v", list)
	}
	_, err = w.WriteStream(c, uid(t, "missing"), "out", []byte("x"))
	wantErr(t, err, worlds.ErrNotFound, worlds.ErrRunNotFound)

	appendOK(t, w, runID, worlds.Event{Type: worlds.EventRunCompleted})
	_, err = w.WriteStream(c, runID, "late", []byte("x"))
	wantErr(t, err, worlds.ErrGone, worlds.ErrRunFinished)
}

func (s *suite) liveStreams(t *testing.T) {
	w := s.shared
	n, ok := w.(worlds.StreamNotifier)
	if !w.Capabilities().LiveStreams {
		t.Skip("World has no live streams")
	}
	if !ok {
		t.Fatal("Capabilities.LiveStreams is set but the World is not a worlds.StreamNotifier")
	}
	c := ctx(t)
	runID, _ := newRun(t, w)
	const total = 40
	// Some chunks exist before the reader subscribes.
	for i := 0; i < 5; i++ {
		if _, err := w.WriteStream(c, runID, "live", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	notes, stop := n.SubscribeStream(runID, "live")
	defer stop()
	go func() {
		for i := 5; i < total; i++ {
			if _, err := w.WriteStream(c, runID, "live", []byte(fmt.Sprint(i))); err != nil {
				done <- err
				return
			}
		}
		done <- w.CloseStream(c, runID, "live")
	}()
	var got []string
	next := 0
	deadline := time.After(s.opts.timeout)
	for {
		p, err := w.ReadStream(c, runID, "live", next, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range p.Chunks {
			if ch.Index != len(got) {
				t.Fatalf("chunk %d delivered at position %d", ch.Index, len(got))
			}
			got = append(got, string(ch.Data))
		}
		next = p.Next
		if p.Closed {
			break
		}
		if len(p.Chunks) > 0 {
			continue // more may be there already
		}
		select {
		case <-notes:
		case <-deadline:
			t.Fatalf("no notification after %d chunks", len(got))
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != total {
		t.Fatalf("read %d chunks, want %d", len(got), total)
	}
	for i, g := range got {
		if g != fmt.Sprint(i) {
			t.Fatalf("chunk %d = %q", i, g)
		}
	}
}

func (s *suite) cancellation(t *testing.T) {
	w := s.shared
	c := ctx(t)
	runID, _ := newRun(t, w)
	token := uid(t, "tok")
	appendOK(t, w, runID,
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s", StepName: "slow"},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s", Attempt: 1},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "h-" + runID, Token: token})
	out := appendOK(t, w, runID, worlds.Event{Type: worlds.EventRunCancelled, Reason: "user asked"})
	if out[0].Reason != "user asked" {
		t.Errorf("reason not stored: %+v", out[0])
	}
	r, err := w.GetRun(c, runID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != worlds.RunCancelled || r.CompletedAt == nil || r.CancelReason != "user asked" {
		t.Errorf("cancelled run %+v", r)
	}
	if h, _ := w.GetHook(c, "h-"+runID); h.Status != worlds.HookDisposed {
		t.Errorf("hook of a cancelled run %+v", h)
	}
	if _, err := w.GetHookByToken(c, token); !errors.Is(err, worlds.ErrHookNotFound) {
		t.Errorf("token of a cancelled run still owned: %v", err)
	}
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s"})
	wantErr(t, err, worlds.ErrGone, worlds.ErrRunFinished)
	_, err = w.Append(c, runID, worlds.Event{Type: worlds.EventRunCancelled})
	wantErr(t, err, worlds.ErrGone, worlds.ErrRunFinished)
}
