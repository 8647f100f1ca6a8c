package worlds

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
)

// ResumeHook delivers payload to the active hook owning token: it appends
// hook_received to the hook's run and queues a workflow delivery so the run
// advances. It returns the hook's [ResumeContext]. An unknown or disposed token
// returns an error matching [ErrHookNotFound]; a finished run, [ErrRunFinished].
// It works on every World, since it only uses the World interface.
func ResumeHook(ctx context.Context, w World, token string, payload json.RawMessage) (ResumeContext, error) {
	if token == "" || len(token) > MaxTokenLength {
		return ResumeContext{}, &ArgumentError{Field: "token", Value: len(token), Reason: fmt.Sprintf("must be 1 to %d bytes", MaxTokenLength)}
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if err := ValidateJSON("payload", payload); err != nil {
		return ResumeContext{}, err
	}
	hook, err := w.GetHookByToken(ctx, token)
	if err != nil {
		return ResumeContext{}, err
	}
	// The token is the webhook's only credential: check it in constant time, so a
	// backend whose lookup is looser than byte equality (a case-insensitive index,
	// a prefix match) cannot let a guessed token through or leak it by timing.
	if subtle.ConstantTimeCompare([]byte(hook.Token), []byte(token)) != 1 {
		return ResumeContext{}, fmt.Errorf("%w: no active hook owns the token", ErrHookNotFound)
	}
	rc := hook.ResumeContext()
	if _, err := w.Append(ctx, rc.RunID, Event{Type: EventHookReceived, CorrelationID: rc.HookID, Payload: payload}); err != nil {
		if errors.Is(err, ErrHookDisposed) {
			return rc, fmt.Errorf("%w: %w", ErrHookNotFound, err)
		}
		return rc, err
	}
	if _, err := w.Queue(ctx, QueueInput{Kind: DeliverWorkflow, WorkflowName: rc.WorkflowName, RunID: rc.RunID}, QueueOptions{}); err != nil {
		return rc, fmt.Errorf("worlds: hook payload stored but the run was not woken: %w", err)
	}
	return rc, nil
}

// AllEvents reads a run's whole log, page by page.
func AllEvents(ctx context.Context, w World, runID string) ([]Event, error) {
	var out []Event
	filter := EventFilter{Limit: MaxPageSize}
	for {
		page, err := w.ListEvents(ctx, runID, filter)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Cursor == "" {
			return out, nil
		}
		filter.Cursor = page.Cursor
	}
}
