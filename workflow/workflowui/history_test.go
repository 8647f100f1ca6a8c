package workflowui

import (
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

func TestHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	resume := at(500)
	boom := &worlds.ErrorInfo{Message: "boom"}
	events := []worlds.Event{
		{Type: worlds.EventStepCreated, CorrelationID: "s1", CreatedAt: at(0)},
		{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1, CreatedAt: at(1)},
		{Type: worlds.EventStepRetrying, CorrelationID: "s1", Error: boom, CreatedAt: at(5)},
		{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 2, CreatedAt: at(10)},
		{Type: worlds.EventStepFailed, CorrelationID: "s1", Error: boom, CreatedAt: at(12)},
		{Type: worlds.EventStepStarted, CorrelationID: "s2", Attempt: 1, CreatedAt: at(20)},
		{Type: worlds.EventStepCompleted, CorrelationID: "orphan", CreatedAt: at(21)},
		{Type: worlds.EventWaitCreated, CorrelationID: "w1", ResumeAt: &resume, CreatedAt: at(30)},
		{Type: worlds.EventWaitCompleted, CorrelationID: "w1", CreatedAt: at(501)},
		{Type: worlds.EventWaitCreated, CorrelationID: "w2", ResumeAt: &resume, CreatedAt: at(600)},
	}
	attempts, waits := history(events)
	s1 := attempts["s1"]
	if len(s1) != 2 || s1[0].Outcome != "retrying" || s1[0].Error != boom || !s1[0].EndedAt.Equal(at(5)) ||
		s1[1].Attempt != 2 || s1[1].Outcome != "failed" || !s1[1].StartedAt.Equal(at(10)) {
		t.Fatalf("s1 attempts %+v", s1)
	}
	if s2 := attempts["s2"]; len(s2) != 1 || s2[0].Outcome != "running" || s2[0].EndedAt != nil {
		t.Fatalf("s2 attempts %+v", s2)
	}
	if _, ok := attempts["orphan"]; ok {
		t.Fatal("a completion without a start made an attempt")
	}
	if len(waits) != 2 || waits[0].CompletedAt == nil || !waits[0].CompletedAt.Equal(at(501)) || waits[1].CompletedAt != nil {
		t.Fatalf("waits %+v", waits)
	}
}
