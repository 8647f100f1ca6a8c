package worlds

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"
)

// ErrRunStarted is returned for a run_started event on a run that already started.
var ErrRunStarted = kindError("run already started", ErrConflict)

// ErrStaleAttempt is returned for a step_started event whose attempt is not the
// step's next one.
var ErrStaleAttempt = kindError("step attempt is not the next one", ErrConflict)

// State is the part of a run's state one event is validated against. A World fills
// the fields [NeedsFor] asks for; the others may be left nil.
type State struct {
	// Run is the run view, nil when the run does not exist.
	Run *Run
	// Step is the step named by a step event's correlation ID, nil when absent.
	Step *Step
	// Hook is the hook named by a hook event's correlation ID, nil when absent.
	Hook *Hook
	// TokenOwner is, for hook_created, the active hook owning the event's token (in
	// any run), nil when the token is free.
	TokenOwner *Hook
	// Wait is the wait named by a wait event's correlation ID, nil when absent.
	Wait *Wait
	// ActiveHooks are, for a terminal run event, the run's active hooks.
	ActiveHooks []Hook
}

// Needs says which entities of [State] an event type is validated against.
type Needs struct {
	Step, Hook, TokenOwner, Wait, ActiveHooks bool
}

// NeedsFor returns what a World must load before calling [Transition] for t.
func NeedsFor(t EventType) Needs {
	switch t {
	case EventStepCreated, EventStepStarted, EventStepCompleted, EventStepFailed, EventStepRetrying, EventStepHeartbeat:
		return Needs{Step: true}
	case EventHookCreated:
		return Needs{Hook: true, TokenOwner: true}
	case EventHookReceived, EventHookDisposed:
		return Needs{Hook: true}
	case EventWaitCreated, EventWaitCompleted:
		return Needs{Wait: true}
	case EventRunCompleted, EventRunFailed, EventRunCancelled:
		return Needs{ActiveHooks: true}
	}
	return Needs{}
}

// Effect is what one accepted event changes. A World persists Event, Run and every
// non-nil entity in one atomic write.
type Effect struct {
	// Event is the event as stored: RunID, Seq and CreatedAt set, and a hook_created
	// whose token is taken rewritten to hook_conflict.
	Event Event
	// Run is the run view after the event.
	Run Run
	// Step, Hook and Wait are the entity the event created or changed, if any.
	Step *Step
	Hook *Hook
	Wait *Wait
	// ClaimToken is a token now owned by Hook.
	ClaimToken string
	// ReleaseTokens are tokens no longer owned by any hook.
	ReleaseTokens []string
	// DisposedHooks are hooks a terminal run event disposed.
	DisposedHooks []Hook
}

// Transition validates ev against st at time now and returns its effect. It is the
// one state machine every World uses, so all Worlds accept and reject the same
// events. It does not modify st.
func Transition(st State, ev Event, now time.Time) (Effect, error) {
	now = now.UTC()
	if err := ev.Validate(); err != nil {
		return Effect{}, err
	}
	if ev.Type == EventRunCreated {
		if st.Run != nil {
			return Effect{}, rejected(&ev, ErrRunExists, "")
		}
		run := Run{
			RunID: ev.RunID, WorkflowName: ev.WorkflowName, Status: RunPending,
			Input: ev.Input, Attributes: maps.Clone(ev.Attributes),
			CreatedAt: now, UpdatedAt: now,
		}
		return stamp(ev, run, now), nil
	}
	if st.Run == nil {
		return Effect{}, rejected(&ev, ErrRunNotFound, "")
	}
	if st.Run.Status.Terminal() {
		return Effect{}, rejected(&ev, ErrRunFinished, "run is "+string(st.Run.Status))
	}
	run := *st.Run
	run.Attributes = maps.Clone(run.Attributes)
	eff := Effect{}
	switch ev.Type {
	case EventRunStarted:
		if run.Status != RunPending {
			return Effect{}, rejected(&ev, ErrRunStarted, "")
		}
		run.Status, run.StartedAt = RunRunning, &now
	case EventRunCompleted, EventRunFailed, EventRunCancelled:
		switch ev.Type {
		case EventRunCompleted:
			run.Status, run.Output = RunCompleted, ev.Output
		case EventRunFailed:
			run.Status, run.Error = RunFailed, ev.Error
		default:
			run.Status, run.CancelReason = RunCancelled, ev.Reason
		}
		run.CompletedAt, run.Blocked = &now, nil
		for _, h := range st.ActiveHooks {
			if h.Status != HookActive {
				continue
			}
			h.Status, h.DisposedAt, h.UpdatedAt = HookDisposed, &now, now
			eff.DisposedHooks = append(eff.DisposedHooks, h)
			eff.ReleaseTokens = append(eff.ReleaseTokens, h.Token)
		}
	case EventRunBlocked:
		b := Blocked{Error: *ev.Error, Since: now, At: now}
		if run.Blocked != nil {
			b.Since = run.Blocked.Since
		}
		run.Blocked = &b
	case EventRunUnblocked:
		if run.Blocked == nil {
			return Effect{}, rejected(&ev, ErrRunNotBlocked, "")
		}
		run.Blocked = nil
	case EventSignalReceived:
		// Buffered in the log: nothing else changes.
	case EventAttributesSet:
		if run.Attributes == nil {
			run.Attributes = map[string]string{}
		}
		maps.Copy(run.Attributes, ev.Attributes)
	case EventStepCreated, EventStepStarted, EventStepCompleted, EventStepFailed, EventStepRetrying, EventStepHeartbeat:
		step, err := stepTransition(st.Step, &ev, now)
		if err != nil {
			return Effect{}, err
		}
		eff.Step = step
	case EventHookCreated:
		if st.Hook != nil {
			return Effect{}, rejected(&ev, ErrHookExists, "")
		}
		if st.TokenOwner != nil && st.TokenOwner.Status == HookActive && st.TokenOwner.HookID != ev.CorrelationID {
			ev.Type, ev.Metadata = EventHookConflict, nil
			break
		}
		eff.Hook = &Hook{
			RunID: ev.RunID, HookID: ev.CorrelationID, Token: ev.Token, WorkflowName: run.WorkflowName,
			Status: HookActive, Metadata: ev.Metadata, CreatedAt: now, UpdatedAt: now,
		}
		eff.ClaimToken = ev.Token
	case EventHookConflict:
	case EventHookReceived, EventHookDisposed:
		if st.Hook == nil || st.Hook.RunID != ev.RunID {
			return Effect{}, rejected(&ev, ErrHookNotFound, "")
		}
		if st.Hook.Status != HookActive {
			return Effect{}, rejected(&ev, ErrHookDisposed, "")
		}
		h := *st.Hook
		h.UpdatedAt = now
		if ev.Type == EventHookReceived {
			h.Received++
		} else {
			h.Status, h.DisposedAt = HookDisposed, &now
			eff.ReleaseTokens = []string{h.Token}
		}
		eff.Hook = &h
	case EventWaitCreated:
		if st.Wait != nil {
			return Effect{}, rejected(&ev, ErrWaitExists, "")
		}
		eff.Wait = &Wait{RunID: ev.RunID, WaitID: ev.CorrelationID, Status: WaitWaiting, ResumeAt: ev.ResumeAt.UTC(), CreatedAt: now}
	case EventWaitCompleted:
		if st.Wait == nil {
			return Effect{}, rejected(&ev, ErrWaitNotFound, "")
		}
		if st.Wait.Status == WaitCompleted {
			return Effect{}, rejected(&ev, ErrWaitCompleted, "")
		}
		// A cancelled timer completes before it is due: that is the point of cancelling it.
		if ev.Reason != WaitCancelled && now.Before(st.Wait.ResumeAt) {
			return Effect{}, rejected(&ev, ErrWaitNotDue, "due at "+st.Wait.ResumeAt.Format(time.RFC3339Nano))
		}
		w := *st.Wait
		w.Status, w.CompletedAt = WaitCompleted, &now
		eff.Wait = &w
	}
	out := stamp(ev, run, now)
	out.Step, out.Hook, out.Wait = eff.Step, eff.Hook, eff.Wait
	out.ClaimToken, out.ReleaseTokens, out.DisposedHooks = eff.ClaimToken, eff.ReleaseTokens, eff.DisposedHooks
	return out, nil
}

func stamp(ev Event, run Run, now time.Time) Effect {
	run.EventCount++
	run.UpdatedAt = now
	ev.RunID, ev.Seq, ev.CreatedAt = run.RunID, run.EventCount, now
	return Effect{Event: ev, Run: run}
}

// StepAfter returns the step as ev, one of its events as stored (stamped by
// [Plan] with its seq and creation time), left it: cur is the step before ev, nil
// before its step_created. A World that keeps some steps only as their events
// rebuilds them with it, the same as [Plan] recorded them.
func StepAfter(cur *Step, ev Event) (*Step, error) {
	if !NeedsFor(ev.Type).Step {
		return nil, &ArgumentError{Field: "ev.Type", Value: ev.Type, Reason: "not a step event"}
	}
	return stepTransition(cur, &ev, ev.CreatedAt)
}

func stepTransition(cur *Step, ev *Event, now time.Time) (*Step, error) {
	if ev.Type == EventStepCreated {
		if cur != nil {
			return nil, rejected(ev, ErrStepExists, "")
		}
		return &Step{
			RunID: ev.RunID, StepID: ev.CorrelationID, StepName: ev.StepName, Status: StepPending,
			Input: ev.Input, CreatedAt: now, UpdatedAt: now,
		}, nil
	}
	if cur == nil {
		return nil, rejected(ev, ErrStepNotFound, "")
	}
	if cur.Status.Terminal() {
		return nil, rejected(ev, ErrStepFinished, "step is "+string(cur.Status))
	}
	s := *cur
	s.UpdatedAt = now
	switch ev.Type {
	case EventStepStarted:
		if ev.Attempt != s.Attempt+1 {
			return nil, rejected(ev, ErrStaleAttempt, "")
		}
		if s.RetryAt != nil && now.Before(*s.RetryAt) {
			return nil, rejected(ev, ErrRetryNotDue, "due at "+s.RetryAt.Format(time.RFC3339Nano))
		}
		s.Status, s.Attempt, s.RetryAt = StepRunning, ev.Attempt, nil
		if s.StartedAt == nil {
			s.StartedAt = &now
		}
		s.HeartbeatTimeout, s.HeartbeatAt = ev.HeartbeatTimeout, nil
		if ev.HeartbeatTimeout > 0 {
			s.HeartbeatAt = &now
		}
	case EventStepHeartbeat:
		if s.Status != StepRunning {
			return nil, rejected(ev, ErrStepNotRunning, "")
		}
		if ev.Attempt != s.Attempt {
			return nil, rejected(ev, ErrStaleAttempt, fmt.Sprintf("attempt %d is running", s.Attempt))
		}
		s.HeartbeatAt = &now
		if len(ev.Payload) > 0 {
			s.HeartbeatDetails = ev.Payload
		}
	case EventStepCompleted:
		if s.Status != StepRunning {
			return nil, rejected(ev, ErrStepNotRunning, "")
		}
		s.Status, s.Output, s.Error, s.CompletedAt = StepCompleted, ev.Output, nil, &now
	case EventStepFailed:
		if ev.Attempt != 0 && (s.Status != StepRunning || ev.Attempt != s.Attempt) {
			return nil, rejected(ev, ErrStaleAttempt, fmt.Sprintf("attempt %d is not running", ev.Attempt))
		}
		s.Status, s.Error, s.CompletedAt = StepFailed, ev.Error, &now
	case EventStepRetrying:
		if s.Status != StepRunning {
			return nil, rejected(ev, ErrStepNotRunning, "")
		}
		if ev.Attempt != 0 && ev.Attempt != s.Attempt {
			return nil, rejected(ev, ErrStaleAttempt, fmt.Sprintf("attempt %d is running", s.Attempt))
		}
		at := ev.RetryAt.UTC()
		s.Status, s.Error, s.RetryAt = StepPending, ev.Error, &at
	}
	return &s, nil
}

// Loader reads the entities [Plan] needs, from inside the World's write (a
// transaction, or consistent reads checked at commit). Each method returns nil and
// no error when the entity does not exist.
type Loader interface {
	Step(ctx context.Context, runID, stepID string) (*Step, error)
	Hook(ctx context.Context, hookID string) (*Hook, error)
	TokenOwner(ctx context.Context, token string) (*Hook, error)
	Wait(ctx context.Context, runID, waitID string) (*Wait, error)
	ActiveHooks(ctx context.Context, runID string) ([]Hook, error)
}

// Plan applies events to run (nil for a run that does not exist yet) in order,
// loading what each needs through load and seeing the changes earlier events of the
// same batch made. It returns one effect per event; a World writes them all or
// none. The last effect's Run is the run view to store.
func Plan(ctx context.Context, runID string, run *Run, events []Event, now time.Time, load Loader) ([]Effect, error) {
	if len(events) == 0 {
		return nil, &ArgumentError{Field: "events", Value: 0, Reason: "append needs at least one event"}
	}
	steps := map[string]*Step{}
	hooks := map[string]*Hook{}
	tokens := map[string]*Hook{} // token -> active owner (nil: released in this batch)
	waits := map[string]*Wait{}
	effects := make([]Effect, 0, len(events))
	for i := range events {
		ev := events[i]
		ev.RunID = runID
		need := NeedsFor(ev.Type)
		st := State{Run: run}
		var err error
		if need.Step {
			st.Step, err = cached(steps, ev.CorrelationID, func() (*Step, error) { return load.Step(ctx, runID, ev.CorrelationID) })
		}
		if err == nil && need.Hook {
			st.Hook, err = cached(hooks, ev.CorrelationID, func() (*Hook, error) { return load.Hook(ctx, ev.CorrelationID) })
		}
		if err == nil && need.TokenOwner {
			st.TokenOwner, err = cached(tokens, ev.Token, func() (*Hook, error) { return load.TokenOwner(ctx, ev.Token) })
		}
		if err == nil && need.Wait {
			st.Wait, err = cached(waits, ev.CorrelationID, func() (*Wait, error) { return load.Wait(ctx, runID, ev.CorrelationID) })
		}
		if err == nil && need.ActiveHooks {
			st.ActiveHooks, err = activeHooks(ctx, load, runID, hooks)
		}
		if err != nil {
			return nil, err
		}
		eff, err := Transition(st, ev, now)
		if err != nil {
			return nil, err
		}
		if eff.Step != nil {
			steps[eff.Step.StepID] = eff.Step
		}
		if eff.Hook != nil {
			hooks[eff.Hook.HookID] = eff.Hook
		}
		for j := range eff.DisposedHooks {
			hooks[eff.DisposedHooks[j].HookID] = &eff.DisposedHooks[j]
		}
		if eff.ClaimToken != "" {
			tokens[eff.ClaimToken] = eff.Hook
		}
		for _, t := range eff.ReleaseTokens {
			tokens[t] = nil
		}
		if eff.Wait != nil {
			waits[eff.Wait.WaitID] = eff.Wait
		}
		run = &eff.Run
		effects = append(effects, eff)
	}
	return effects, nil
}

func cached[T any](m map[string]*T, key string, load func() (*T, error)) (*T, error) {
	if v, ok := m[key]; ok {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return nil, err
	}
	m[key] = v
	return v, nil
}

func activeHooks(ctx context.Context, load Loader, runID string, seen map[string]*Hook) ([]Hook, error) {
	stored, err := load.ActiveHooks(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []Hook
	for _, h := range stored {
		if _, ok := seen[h.HookID]; !ok {
			out = append(out, h)
		}
	}
	for _, h := range seen {
		if h != nil && h.RunID == runID && h.Status == HookActive {
			out = append(out, *h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].HookID < out[j].HookID })
	return out, nil
}
