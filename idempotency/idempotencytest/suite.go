package idempotencytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/idempotency"
)

var keySeq atomic.Uint64

// uniqueKey returns a key no other test uses, so suites can share one backend.
func uniqueKey(t *testing.T) string {
	return fmt.Sprintf("suite-%d-%d#%s", time.Now().UnixNano(), keySeq.Add(1), t.Name())
}

// RunStoreSuite proves that a Store implements the contract idempotency.Manager relies
// on. newStore is called once per sub-test; stores may share a backend.
func RunStoreSuite(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t.Helper()
	base := time.UnixMilli(1767225600123)
	inProgress := func(key string, now time.Time, leaseMs int64) idempotency.Record {
		r := idempotency.Record{
			Key: key, Status: idempotency.StatusInProgress,
			ExpiresAt:      now.Unix() + 3600,
			ValidationHash: "v-hash",
		}
		if leaseMs != 0 {
			r.InProgressExpiresAt = now.UnixMilli() + leaseMs
		}
		return r
	}
	ctx := context.Background()

	t.Run("PutThenGet", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		rec := inProgress(key, base, 30000)
		if err := s.PutInProgress(ctx, rec, base); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != key || got.Status != idempotency.StatusInProgress || got.ExpiresAt != rec.ExpiresAt ||
			got.InProgressExpiresAt != rec.InProgressExpiresAt || got.ValidationHash != "v-hash" || got.Data != nil {
			t.Fatalf("got %+v, want %+v", got, rec)
		}
	})

	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		if _, err := s.Get(ctx, uniqueKey(t)); !errors.Is(err, idempotency.ErrItemNotFound) {
			t.Fatalf("err = %v, want ErrItemNotFound", err)
		}
	})

	t.Run("ConflictWithLiveLease", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		if err := s.PutInProgress(ctx, inProgress(key, base, 30000), base); err != nil {
			t.Fatal(err)
		}
		later := base.Add(time.Second)
		err := s.PutInProgress(ctx, inProgress(key, later, 30000), later)
		var exists *idempotency.ItemAlreadyExistsError
		if !errors.As(err, &exists) || !errors.Is(err, idempotency.ErrItemAlreadyExists) {
			t.Fatalf("err = %v, want *ItemAlreadyExistsError", err)
		}
		if exists.Existing != nil && (exists.Existing.Status != idempotency.StatusInProgress || exists.Existing.Key != key ||
			exists.Existing.InProgressExpiresAt != base.UnixMilli()+30000) {
			t.Fatalf("existing record %+v", exists.Existing)
		}
	})

	t.Run("ConflictWithoutLeaseUntilExpiry", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		if err := s.PutInProgress(ctx, inProgress(key, base, 0), base); err != nil {
			t.Fatal(err)
		}
		later := base.Add(10 * time.Minute)
		if err := s.PutInProgress(ctx, inProgress(key, later, 0), later); !errors.Is(err, idempotency.ErrItemAlreadyExists) {
			// A record without a lease is protected by its expiry alone on DynamoDB;
			// the cache layer treats it as an orphan, as the reference does.
			if err != nil {
				t.Fatalf("err = %v", err)
			}
		}
	})

	t.Run("TakeOverExpiredLease", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		if err := s.PutInProgress(ctx, inProgress(key, base, 1000), base); err != nil {
			t.Fatal(err)
		}
		later := base.Add(5 * time.Second)
		next := inProgress(key, later, 30000)
		if err := s.PutInProgress(ctx, next, later); err != nil {
			t.Fatalf("lease expired, want takeover: %v", err)
		}
		got, err := s.Get(ctx, key)
		if err != nil || got.InProgressExpiresAt != next.InProgressExpiresAt {
			t.Fatalf("after takeover got %+v, %v", got, err)
		}
	})

	t.Run("TakeOverExpiredRecord", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		rec := inProgress(key, base, 0)
		rec.ExpiresAt = base.Unix() + 2
		if err := s.PutInProgress(ctx, rec, base); err != nil {
			t.Fatal(err)
		}
		done := rec
		done.Status, done.Data = idempotency.StatusCompleted, json.RawMessage(`{"a":1}`)
		if err := s.Complete(ctx, done, base); err != nil {
			t.Fatal(err)
		}
		later := base.Add(time.Hour)
		if err := s.PutInProgress(ctx, inProgress(key, later, 30000), later); err != nil {
			t.Fatalf("record expired, want takeover: %v", err)
		}
	})

	t.Run("CompleteThenReplay", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		if err := s.PutInProgress(ctx, inProgress(key, base, 30000), base); err != nil {
			t.Fatal(err)
		}
		data := json.RawMessage(`{"order_id":"ORD-123","n":[1,2.5,-3e-7],"ok":true,"nested":{"b":null,"s":"<é>"},"empty":"","big":12345678901234567890}`)
		done := idempotency.Record{Key: key, Status: idempotency.StatusCompleted, ExpiresAt: base.Unix() + 7200, Data: data, ValidationHash: "v-hash"}
		if err := s.Complete(ctx, done, base); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != idempotency.StatusCompleted || got.ExpiresAt != done.ExpiresAt || got.ValidationHash != "v-hash" {
			t.Fatalf("got %+v", got)
		}
		assertJSONEqual(t, got.Data, data)
		later := base.Add(time.Minute)
		err = s.PutInProgress(ctx, inProgress(key, later, 30000), later)
		var exists *idempotency.ItemAlreadyExistsError
		if !errors.As(err, &exists) {
			t.Fatalf("err = %v, want conflict with completed record", err)
		}
		if exists.Existing != nil {
			if exists.Existing.Status != idempotency.StatusCompleted {
				t.Fatalf("existing %+v", exists.Existing)
			}
			assertJSONEqual(t, exists.Existing.Data, data)
		}
	})

	t.Run("DeleteFreesKey", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		if err := s.PutInProgress(ctx, inProgress(key, base, 30000), base); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, idempotency.ErrItemNotFound) {
			t.Fatalf("after delete err = %v", err)
		}
		if err := s.PutInProgress(ctx, inProgress(key, base, 30000), base); err != nil {
			t.Fatalf("put after delete: %v", err)
		}
	})

	t.Run("ConcurrentPutsOneWinner", func(t *testing.T) {
		t.Parallel()
		s, key := newStore(t), uniqueKey(t)
		const n = 20
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				err := s.PutInProgress(ctx, inProgress(key, base, 30000), base)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, idempotency.ErrItemAlreadyExists):
					conflicts.Add(1)
				default:
					t.Errorf("put: %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != n-1 {
			t.Fatalf("wins=%d conflicts=%d, want 1 and %d", wins.Load(), conflicts.Load(), n-1)
		}
	})

	t.Run("ManagerConcurrentSameKey", func(t *testing.T) {
		t.Parallel()
		runConcurrentSameKey(t, newStore(t))
	})

	t.Run("ManagerLifecycle", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		m, err := idempotency.New(s, idempotency.Options{
			KeyPrefix: uniqueKey(t), EventKeyJMESPath: "id", PayloadValidationJMESPath: "amount",
			LookupEnv: func(string) (string, bool) { return "", false },
		})
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			OrderID string `json:"order_id"`
			Calls   int64  `json:"calls"`
		}
		var calls atomic.Int64
		fn := func(ctx context.Context) (result, error) {
			return result{OrderID: "ORD-1", Calls: calls.Add(1)}, nil
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		event := map[string]any{"id": "ORD-1", "amount": 42}
		first, err := idempotency.Execute(cctx, m, event, fn)
		if err != nil {
			t.Fatal(err)
		}
		again, err := idempotency.Execute(cctx, m, event, fn)
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 || again != first {
			t.Fatalf("replay %+v after %+v with %d calls", again, first, calls.Load())
		}
		_, err = idempotency.Execute(cctx, m, map[string]any{"id": "ORD-1", "amount": 43}, fn)
		if !errors.Is(err, idempotency.ErrValidation) {
			t.Fatalf("changed amount: err = %v, want ErrValidation", err)
		}
		boom := errors.New("boom")
		other := map[string]any{"id": "ORD-2", "amount": 1}
		if _, err := idempotency.Execute(cctx, m, other, func(context.Context) (result, error) { return result{}, boom }); !errors.Is(err, boom) {
			t.Fatalf("business error: %v", err)
		}
		if _, err := idempotency.Execute(cctx, m, other, fn); err != nil {
			t.Fatalf("retry after business error: %v", err)
		}
		if calls.Load() != 2 {
			t.Fatalf("calls = %d, want 2", calls.Load())
		}
	})
}

// runConcurrentSameKey: of 50 simultaneous executions with one key the callback runs
// once and every other call gets the stored result or an in-progress error.
func runConcurrentSameKey(t *testing.T, s idempotency.Store) {
	m, err := idempotency.New(s, idempotency.Options{
		KeyPrefix: uniqueKey(t), EventKeyJMESPath: "id",
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var runs, replayed, inProgress atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			got, err := idempotency.Execute(ctx, m, map[string]any{"id": "same"}, func(context.Context) (string, error) {
				runs.Add(1)
				<-release
				return "done", nil
			})
			switch {
			case errors.Is(err, idempotency.ErrAlreadyInProgress):
				inProgress.Add(1)
			case err != nil:
				t.Errorf("execute: %v", err)
			case got != "done":
				t.Errorf("got %q", got)
			default:
				replayed.Add(1)
			}
		})
	}
	for runs.Load() == 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if runs.Load() != 1 || replayed.Load()+inProgress.Load() != 50 {
		t.Fatalf("runs=%d replayed=%d inProgress=%d", runs.Load(), replayed.Load(), inProgress.Load())
	}
}

func assertJSONEqual(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("stored data %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("data\n got %s\nwant %s", got, want)
	}
}
