package worlds

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func TestTransitionRejects(t *testing.T) {
	t.Parallel()
	running := &Run{RunID: "r1", WorkflowName: "wf", Status: RunRunning, EventCount: 3}
	done := &Run{RunID: "r1", WorkflowName: "wf", Status: RunCompleted, EventCount: 5}
	completed := &Step{RunID: "r1", StepID: "s1", Status: StepCompleted, Attempt: 1}
	pending := &Step{RunID: "r1", StepID: "s1", Status: StepPending}
	retrying := &Step{RunID: "r1", StepID: "s1", Status: StepPending, Attempt: 1, RetryAt: ptr(t0.Add(time.Minute))}
	disposed := &Hook{RunID: "r1", HookID: "h1", Token: "tok", Status: HookDisposed}
	wait := &Wait{RunID: "r1", WaitID: "w1", Status: WaitWaiting, ResumeAt: t0.Add(time.Hour)}
	cases := []struct {
		name     string
		st       State
		ev       Event
		kind     error
		specific error
	}{
		{"unknown type", State{Run: running}, Event{Type: "nope"}, ErrEventInvalid, nil},
		{"step without correlation", State{Run: running}, Event{Type: EventStepCreated, StepName: "x"}, ErrEventInvalid, nil},
		{"run event with correlation", State{Run: running}, Event{Type: EventRunStarted, CorrelationID: "x"}, ErrEventInvalid, nil},
		{"bad json input", State{}, Event{Type: EventRunCreated, WorkflowName: "wf", Input: []byte("{")}, ErrEventInvalid, nil},
		{"run created twice", State{Run: running}, Event{Type: EventRunCreated, WorkflowName: "wf"}, ErrConflict, ErrRunExists},
		{"event on missing run", State{}, Event{Type: EventRunStarted}, ErrNotFound, ErrRunNotFound},
		{"append to finished run", State{Run: done}, Event{Type: EventStepCreated, CorrelationID: "s", StepName: "x"}, ErrGone, ErrRunFinished},
		{"started twice", State{Run: running}, Event{Type: EventRunStarted}, ErrConflict, ErrRunStarted},
		{"complete step twice", State{Run: running, Step: completed}, Event{Type: EventStepCompleted, CorrelationID: "s1"}, ErrConflict, ErrStepFinished},
		{"complete pending step", State{Run: running, Step: pending}, Event{Type: EventStepCompleted, CorrelationID: "s1"}, ErrConflict, ErrStepNotRunning},
		{"complete unknown step", State{Run: running}, Event{Type: EventStepCompleted, CorrelationID: "s1"}, ErrNotFound, ErrStepNotFound},
		{"stale attempt", State{Run: running, Step: pending}, Event{Type: EventStepStarted, CorrelationID: "s1", Attempt: 2}, ErrConflict, ErrStaleAttempt},
		{"retry too early", State{Run: running, Step: retrying}, Event{Type: EventStepStarted, CorrelationID: "s1", Attempt: 2}, ErrTooEarly, ErrRetryNotDue},
		{"receive on disposed hook", State{Run: running, Hook: disposed}, Event{Type: EventHookReceived, CorrelationID: "h1"}, ErrGone, ErrHookDisposed},
		{"wait completed early", State{Run: running, Wait: wait}, Event{Type: EventWaitCompleted, CorrelationID: "w1"}, ErrTooEarly, ErrWaitNotDue},
		{"wait created twice", State{Run: running, Wait: wait}, Event{Type: EventWaitCreated, CorrelationID: "w1", ResumeAt: &t0}, ErrConflict, ErrWaitExists},
		{"wait completed with an unknown reason", State{Run: running, Wait: wait}, Event{Type: EventWaitCompleted, CorrelationID: "w1", Reason: "bogus"}, ErrEventInvalid, nil},
		{"past wait completed with an unknown reason", State{Run: running, Wait: &Wait{RunID: "r1", WaitID: "w1", Status: WaitWaiting, ResumeAt: t0.Add(-time.Hour)}}, Event{Type: EventWaitCompleted, CorrelationID: "w1", Reason: "timeout"}, ErrEventInvalid, nil},
		{"cancel of an unknown wait", State{Run: running}, Event{Type: EventWaitCompleted, CorrelationID: "w1", Reason: WaitCancelled}, ErrNotFound, ErrWaitNotFound},
		{"cancel of a completed wait", State{Run: running, Wait: &Wait{RunID: "r1", WaitID: "w1", Status: WaitCompleted, ResumeAt: t0.Add(time.Hour)}}, Event{Type: EventWaitCompleted, CorrelationID: "w1", Reason: WaitCancelled}, ErrConflict, ErrWaitCompleted},
		{"cancel on a finished run", State{Run: done, Wait: wait}, Event{Type: EventWaitCompleted, CorrelationID: "w1", Reason: WaitCancelled}, ErrGone, ErrRunFinished},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.ev.RunID = "r1"
			_, err := Transition(tc.st, tc.ev, t0)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			}
			if tc.specific != nil && !errors.Is(err, tc.specific) {
				t.Fatalf("err = %v, want %v", err, tc.specific)
			}
			var ee *EventError
			if !errors.As(err, &ee) || ee.Type != tc.ev.Type {
				t.Fatalf("err = %#v, want *EventError for %s", err, tc.ev.Type)
			}
		})
	}
}

type memLoader struct {
	steps  map[string]*Step
	hooks  map[string]*Hook
	tokens map[string]*Hook
}

func (m memLoader) Step(_ context.Context, _, id string) (*Step, error) { return m.steps[id], nil }
func (m memLoader) Hook(_ context.Context, id string) (*Hook, error)    { return m.hooks[id], nil }
func (m memLoader) TokenOwner(_ context.Context, tok string) (*Hook, error) {
	return m.tokens[tok], nil
}
func (m memLoader) Wait(context.Context, string, string) (*Wait, error) { return nil, nil }
func (m memLoader) ActiveHooks(_ context.Context, runID string) ([]Hook, error) {
	var out []Hook
	for _, h := range m.hooks {
		if h.RunID == runID && h.Status == HookActive {
			out = append(out, *h)
		}
	}
	return out, nil
}

func TestPlanLifecycle(t *testing.T) {
	t.Parallel()
	other := &Hook{RunID: "r0", HookID: "h0", Token: "taken", Status: HookActive}
	load := memLoader{steps: map[string]*Step{}, hooks: map[string]*Hook{"h0": other}, tokens: map[string]*Hook{"taken": other}}
	effects, err := Plan(context.Background(), "r1", nil, []Event{
		{Type: EventRunCreated, WorkflowName: "wf", Input: []byte(`{"a":1}`)},
		{Type: EventRunStarted},
		{Type: EventStepCreated, CorrelationID: "s1", StepName: "charge"},
		{Type: EventStepStarted, CorrelationID: "s1", Attempt: 1},
		{Type: EventStepCompleted, CorrelationID: "s1", Output: []byte(`42`)},
		{Type: EventHookCreated, CorrelationID: "h1", Token: "mine"},
		{Type: EventHookCreated, CorrelationID: "h2", Token: "taken"},
		{Type: EventRunCompleted, Output: []byte(`"ok"`)},
	}, t0, load)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 8 {
		t.Fatalf("got %d effects", len(effects))
	}
	for i, eff := range effects {
		if eff.Event.Seq != int64(i+1) || eff.Event.RunID != "r1" {
			t.Fatalf("effect %d: seq %d run %q", i, eff.Event.Seq, eff.Event.RunID)
		}
	}
	if got := effects[4].Step; got == nil || got.Status != StepCompleted || string(got.Output) != "42" || got.Attempt != 1 {
		t.Fatalf("step after completion = %+v", got)
	}
	if effects[5].ClaimToken != "mine" || effects[5].Hook == nil {
		t.Fatalf("hook_created with a free token: %+v", effects[5])
	}
	if effects[6].Event.Type != EventHookConflict || effects[6].Hook != nil || effects[6].ClaimToken != "" {
		t.Fatalf("hook_created with a taken token must become hook_conflict: %+v", effects[6])
	}
	last := effects[7]
	if last.Run.Status != RunCompleted || last.Run.EventCount != 8 || last.Run.CompletedAt == nil {
		t.Fatalf("final run = %+v", last.Run)
	}
	if len(last.DisposedHooks) != 1 || last.DisposedHooks[0].HookID != "h1" || len(last.ReleaseTokens) != 1 || last.ReleaseTokens[0] != "mine" {
		t.Fatalf("terminal event must dispose the run's own active hooks only: %+v", last)
	}
}

func TestCancelKeepsReason(t *testing.T) {
	t.Parallel()
	run := &Run{RunID: "r1", Status: RunRunning, EventCount: 2}
	eff, err := Transition(State{Run: run}, Event{RunID: "r1", Type: EventRunCancelled, Reason: "customer asked"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Run.Status != RunCancelled || eff.Run.CancelReason != "customer asked" {
		t.Fatalf("cancelled run = %+v", eff.Run)
	}
}

// A timer that lost a Select is completed with Reason WaitCancelled before it is
// due; it is then completed like any other wait, and completing it again, either
// way, is ErrWaitCompleted.
func TestWaitCancelledBeforeDue(t *testing.T) {
	t.Parallel()
	run := &Run{RunID: "r1", Status: RunRunning, EventCount: 3}
	wait := &Wait{RunID: "r1", WaitID: "w1", Status: WaitWaiting, ResumeAt: t0.Add(time.Hour), CreatedAt: t0}
	eff, err := Transition(State{Run: run, Wait: wait}, Event{RunID: "r1", Type: EventWaitCompleted, CorrelationID: "w1", Reason: WaitCancelled}, t0)
	if err != nil {
		t.Fatalf("cancel an hour before the resume time: %v", err)
	}
	if eff.Wait == nil || eff.Wait.Status != WaitCompleted || eff.Wait.CompletedAt == nil || !eff.Wait.CompletedAt.Equal(t0) || !eff.Wait.ResumeAt.Equal(wait.ResumeAt) {
		t.Fatalf("cancelled wait = %+v", eff.Wait)
	}
	if eff.Event.Reason != WaitCancelled || eff.Event.Seq != 4 || eff.Run.EventCount != 4 {
		t.Fatalf("stored event %+v, run %+v", eff.Event, eff.Run)
	}
	if wait.Status != WaitWaiting {
		t.Fatal("Transition modified its input state")
	}
	for _, reason := range []string{"", WaitCancelled} {
		_, err := Transition(State{Run: &eff.Run, Wait: eff.Wait}, Event{RunID: "r1", Type: EventWaitCompleted, CorrelationID: "w1", Reason: reason}, t0.Add(2*time.Hour))
		if !errors.Is(err, ErrConflict) || !errors.Is(err, ErrWaitCompleted) {
			t.Errorf("wait_completed (reason %q) after a cancel: %v, want ErrWaitCompleted", reason, err)
		}
	}
	// Once due, a cancel is still accepted: the runtime may lose the race with the wake-up.
	if _, err := Transition(State{Run: run, Wait: wait}, Event{RunID: "r1", Type: EventWaitCompleted, CorrelationID: "w1", Reason: WaitCancelled}, t0.Add(2*time.Hour)); err != nil {
		t.Errorf("cancel after the resume time: %v", err)
	}
	// Without the reason the wait is still not due.
	if _, err := Transition(State{Run: run, Wait: wait}, Event{RunID: "r1", Type: EventWaitCompleted, CorrelationID: "w1"}, t0); !errors.Is(err, ErrWaitNotDue) {
		t.Errorf("plain wait_completed before due: %v, want ErrWaitNotDue", err)
	}
}

func TestWaitCompletedReasonValidated(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"bogus", "Cancelled", "cancelled "} {
		ev := Event{RunID: "r1", Type: EventWaitCompleted, CorrelationID: "w1", Reason: reason}
		err := ev.Validate()
		var ee *EventError
		if !errors.Is(err, ErrEventInvalid) || !errors.As(err, &ee) || ee.Field != "reason" || ee.Type != EventWaitCompleted {
			t.Errorf("Validate(wait_completed, reason %q) = %v, want ErrEventInvalid naming field reason", reason, err)
		}
	}
	for _, reason := range []string{"", WaitCancelled} {
		ev := Event{RunID: "r1", Type: EventWaitCompleted, CorrelationID: "w1", Reason: reason}
		if err := ev.Validate(); err != nil {
			t.Errorf("Validate(wait_completed, reason %q) = %v", reason, err)
		}
	}
	// run_cancelled keeps its free-text reason.
	if err := (&Event{RunID: "r1", Type: EventRunCancelled, Reason: "bogus"}).Validate(); err != nil {
		t.Errorf("run_cancelled with a free-text reason: %v", err)
	}
}

func TestRetryThenStart(t *testing.T) {
	t.Parallel()
	run := &Run{RunID: "r1", Status: RunRunning, EventCount: 4}
	step := &Step{RunID: "r1", StepID: "s1", Status: StepRunning, Attempt: 1}
	eff, err := Transition(State{Run: run, Step: step}, Event{RunID: "r1", Type: EventStepRetrying, CorrelationID: "s1", Error: &ErrorInfo{Message: "boom"}, RetryAt: ptr(t0.Add(time.Second))}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Step.Status != StepPending || eff.Step.RetryAt == nil {
		t.Fatalf("retrying step = %+v", eff.Step)
	}
	if _, err := Transition(State{Run: &eff.Run, Step: eff.Step}, Event{RunID: "r1", Type: EventStepStarted, CorrelationID: "s1", Attempt: 2}, t0.Add(time.Second)); err != nil {
		t.Fatalf("start at retry time: %v", err)
	}
}

type flowA struct{}
type flowB struct{}

func (flowB) WorkflowName() string { return "billing" }

func TestNamesAndRoutes(t *testing.T) {
	t.Parallel()
	if got := WorkflowName[flowA](); got != "worlds.flowA" {
		t.Fatalf("WorkflowName[flowA] = %q", got)
	}
	if got := WorkflowName[flowB](); got != "billing" {
		t.Fatalf("WorkflowName[flowB] = %q", got)
	}
	rt := Routes(Route[flowA]("heavy"), Route[flowB]("ordered"))
	if err := rt.Err(); err != nil {
		t.Fatal(err)
	}
	if q, ok := rt.Queue("billing"); !ok || q != "ordered" {
		t.Fatalf("route billing = %q %v", q, ok)
	}
	if err := Routes(Route[flowA]("a"), Route[flowA]("b")).Err(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("conflicting routes: %v", err)
	}
}

func TestQueueInputRoundTrip(t *testing.T) {
	t.Parallel()
	in := QueueInput{Kind: DeliverStep, WorkflowName: "wf", RunID: "r1", StepID: "s1"}
	b, err := MarshalQueueInput(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnmarshalQueueInput(b)
	if err != nil || out.StepID != "s1" || out.Kind != DeliverStep {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	for _, body := range []string{"", "not json", `{"kind":"step","runId":"r","workflowName":"w"}`, `{"kind":"x","runId":"r"}`} {
		if _, err := UnmarshalQueueInput([]byte(body)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("UnmarshalQueueInput(%q) = %v, want ErrInvalidArgument", body, err)
		}
	}
}

func FuzzUnmarshalQueueInput(f *testing.F) {
	f.Add([]byte(`{"kind":"workflow","runId":"r","workflowName":"w"}`))
	f.Add([]byte(`{"kind":"step"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := UnmarshalQueueInput(body)
		if err != nil {
			return
		}
		if in.Validate() != nil {
			t.Fatalf("accepted invalid input %+v", in)
		}
		if _, err := MarshalQueueInput(in); err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
	})
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err, want error
	}{
		{ErrStepFinished, ErrConflict},
		{ErrRunFinished, ErrGone},
		{ErrWaitNotDue, ErrTooEarly},
		{ErrItemTooLarge, ErrEventInvalid},
		{ErrHookNotFound, ErrNotFound},
		{errors.New("throttled"), nil},
		{ErrAppendContention, nil},
	} {
		if got := KindOf(tc.err); got != tc.want {
			t.Errorf("KindOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// StepAfter, folding a step's stored events, rebuilds the step Plan recorded
// after each of them, through every kind of step event and across appends.
func TestStepAfterRebuildsPlannedSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	load := memLoader{steps: map[string]*Step{}}
	run := &Run{RunID: "r1", WorkflowName: "wf", Status: RunRunning, EventCount: 2}
	appends := [][]Event{
		{{Type: EventStepCreated, CorrelationID: "s1", StepName: "charge", Input: []byte(`{"n": 1}`)},
			{Type: EventStepStarted, CorrelationID: "s1", Attempt: 1, HeartbeatTimeout: time.Minute}},
		{{Type: EventStepHeartbeat, CorrelationID: "s1", Attempt: 1, Payload: []byte(`"half"`)}},
		{{Type: EventStepRetrying, CorrelationID: "s1", Attempt: 1, Error: &ErrorInfo{Message: "boom"}, RetryAt: ptr(t0.Add(time.Hour).In(time.FixedZone("x", 3600)))}},
		{{Type: EventStepStarted, CorrelationID: "s1", Attempt: 2}, {Type: EventStepCompleted, CorrelationID: "s1", Output: []byte(`{"ok":true}`)},
			{Type: EventStepCreated, CorrelationID: "s2", StepName: "ship"}, {Type: EventStepFailed, CorrelationID: "s2", Error: &ErrorInfo{Message: "no", Fatal: true}}},
	}
	var cur = map[string]*Step{}
	for i, evs := range appends {
		now := t0.Add(time.Duration(i+1) * 2 * time.Hour)
		effects, err := Plan(ctx, "r1", run, evs, now, load)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		for _, eff := range effects {
			step, err := StepAfter(cur[eff.Event.CorrelationID], eff.Event)
			if err != nil {
				t.Fatalf("StepAfter(%s): %v", eff.Event.Type, err)
			}
			if !reflect.DeepEqual(step, eff.Step) {
				t.Fatalf("after %s:\n got %+v\nwant %+v", eff.Event.Type, step, eff.Step)
			}
			cur[step.StepID] = step
			load.steps[step.StepID] = eff.Step
		}
		last := effects[len(effects)-1].Run
		run = &last
	}
	if _, err := StepAfter(nil, Event{Type: EventSignalReceived}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("StepAfter of a signal: %v, want ErrInvalidArgument", err)
	}
}
