package idempotencytest_test

import (
	"testing"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	shared := idempotencytest.NewMemoryStore()
	idempotencytest.RunStoreSuite(t, func(*testing.T) idempotency.Store { return shared })
}

func TestMemoryStoreWithoutExisting(t *testing.T) {
	t.Parallel()
	idempotencytest.RunStoreSuite(t, func(*testing.T) idempotency.Store { return &idempotencytest.MemoryStore{} })
}
