package worlds

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// looseWorld finds hooks by token case-insensitively, as a careless backend might.
type looseWorld struct {
	World
	hook     Hook
	appended int
}

func (w *looseWorld) GetHookByToken(_ context.Context, token string) (Hook, error) {
	if strings.EqualFold(token, w.hook.Token) {
		return w.hook, nil
	}
	return Hook{}, ErrHookNotFound
}

func (w *looseWorld) Append(context.Context, string, ...Event) ([]Event, error) {
	w.appended++
	return nil, nil
}

func (w *looseWorld) Queue(context.Context, QueueInput, QueueOptions) (string, error) {
	return "d", nil
}

func TestResumeHookChecksTheTokenExactly(t *testing.T) {
	t.Parallel()
	w := &looseWorld{hook: Hook{RunID: "r1", HookID: "h1", Token: "Secret-Token", WorkflowName: "wf", Status: HookActive}}
	if _, err := ResumeHook(context.Background(), w, "secret-token", []byte(`1`)); !errors.Is(err, ErrHookNotFound) {
		t.Fatalf("a token differing in case resumed the hook: %v", err)
	}
	if w.appended != 0 {
		t.Fatalf("payload appended for a wrong token")
	}
	rc, err := ResumeHook(context.Background(), w, "Secret-Token", []byte(`1`))
	if err != nil || rc.RunID != "r1" || w.appended != 1 {
		t.Fatalf("exact token: %+v, %v (appended %d)", rc, err, w.appended)
	}
	for _, bad := range []struct{ token, payload string }{{"", "1"}, {strings.Repeat("x", MaxTokenLength+1), "1"}, {"Secret-Token", "{"}} {
		if _, err := ResumeHook(context.Background(), w, bad.token, []byte(bad.payload)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ResumeHook(%.10q, %q) = %v, want ErrInvalidArgument", bad.token, bad.payload, err)
		}
	}
}
