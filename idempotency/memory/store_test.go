package memory_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
	"github.com/cairn-go/cairn/idempotency/memory"
)

func TestStoreSuite(t *testing.T) {
	t.Parallel()
	shared := memory.New()
	idempotencytest.RunStoreSuite(t, func(*testing.T) idempotency.Store { return shared })
}

func TestZeroValue(t *testing.T) {
	t.Parallel()
	idempotencytest.RunStoreSuite(t, func(*testing.T) idempotency.Store { return &memory.Store{} })
}

// TestRecordsAreCopied: a caller reusing its buffers cannot change stored records.
func TestRecordsAreCopied(t *testing.T) {
	t.Parallel()
	ctx, s, now := context.Background(), memory.New(), time.Now()
	data := json.RawMessage(`{"a":1}`)
	rec := idempotency.Record{Key: "p#k", Status: idempotency.StatusCompleted, ExpiresAt: now.Unix() + 60, Data: data}
	if err := s.Complete(ctx, rec, now); err != nil {
		t.Fatal(err)
	}
	data[2] = 'X'
	got, err := s.Get(ctx, "p#k")
	if err != nil {
		t.Fatal(err)
	}
	got.Data[2] = 'Y'
	again, _ := s.Get(ctx, "p#k")
	if string(again.Data) != `{"a":1}` {
		t.Fatalf("stored data changed to %s", again.Data)
	}
}

// TestExpiredRecordsAreDropped: a store under a steady stream of new keys keeps only
// the live records, bounded by a constant factor.
func TestExpiredRecordsAreDropped(t *testing.T) {
	t.Parallel()
	ctx, s := context.Background(), memory.New()
	start := time.Unix(1_767_225_600, 0)
	for i := range 20_000 {
		now := start.Add(time.Duration(i) * time.Second)
		rec := idempotency.Record{Key: "p#" + now.String(), Status: idempotency.StatusInProgress, ExpiresAt: now.Unix() + 100}
		if err := s.PutInProgress(ctx, rec, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(); n > 4096 {
		t.Fatalf("%d records held; only about 100 are live", n)
	}
}
