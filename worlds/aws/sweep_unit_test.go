package awsworld

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestOrphaned(t *testing.T) {
	t.Parallel()
	w, err := New(validConfig(), &fakeDB{}, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	cases := []struct {
		name string
		rec  record
		want bool
	}{
		{"never received, within the lease", record{DueAt: now.Add(-30 * time.Second)}, false},
		{"never received, past the lease", record{DueAt: now.Add(-61 * time.Second)}, true},
		{"due later", record{DueAt: now.Add(time.Hour)}, false},
		{"scheduled, within the grace", record{DueAt: now.Add(-3 * time.Minute), scheduled: true}, false},
		{"scheduled, past the grace", record{DueAt: now.Add(-7 * time.Minute), scheduled: true}, true},
		{"swept a moment ago", record{DueAt: now.Add(-time.Hour), published: ms(-10 * time.Second)}, false},
		{"held under a live lease", record{DueAt: now.Add(-time.Hour), claim: "c", lease: ms(time.Second), attempts: 1}, false},
		{"claimed, lease expired long ago", record{DueAt: now.Add(-30 * 24 * time.Hour), claim: "c", lease: ms(-15 * 24 * time.Hour), attempts: 1}, true},
		{"failed, in backoff", record{DueAt: now.Add(-time.Hour), lease: ms(-10 * time.Minute), attempts: 3}, false},
		{"failed, dead-lettered within its retention", record{DueAt: now.Add(-10 * 24 * time.Hour), lease: ms(-10 * 24 * time.Hour), attempts: 10}, false},
		{"failed, dead-letter retention over", record{DueAt: now.Add(-15 * 24 * time.Hour), lease: ms(-15 * 24 * time.Hour), attempts: 10}, true},
		{"failed, then queued again and its new message lost", record{DueAt: now.Add(-time.Hour), published: ms(-time.Hour), attempts: 2}, true},
	}
	for _, tc := range cases {
		if got := w.orphaned(&tc.rec, now); got != tc.want {
			t.Errorf("%s: orphaned = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A DynamoDB client without Scan cannot index legacy queue records: a typed
// configuration error, not a panic.
func TestIndexLegacyQueueRecordsNeedsScan(t *testing.T) {
	t.Parallel()
	w, err := New(validConfig(), &fakeDB{}, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.IndexLegacyQueueRecords(context.Background())
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "db" {
		t.Fatalf("IndexLegacyQueueRecords = %v, want a *ConfigError on db", err)
	}
}
