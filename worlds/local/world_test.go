package local_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldtest"
)

func TestWorldMemory(t *testing.T) {
	worldtest.Run(t, func(t *testing.T) worlds.World {
		return open(t, local.Config{Path: local.Memory, PollInterval: 50 * time.Millisecond})
	})
}

func TestWorldFile(t *testing.T) {
	worldtest.Run(t, func(t *testing.T) worlds.World {
		return open(t, local.Config{
			Path: filepath.Join(t.TempDir(), "world.db"), PollInterval: 50 * time.Millisecond,
			MaxItemBytes: 64 << 10, MaxStreamWrite: 10, MaxDelay: 24 * 365 * time.Hour * 10,
		})
	})
}

// TestWorldRetention runs the suite on a clock the suite moves forward, with a
// retention of a week.
func TestWorldRetention(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	const week = 7 * 24 * time.Hour
	worldtest.Run(t, func(t *testing.T) worlds.World {
		return open(t, local.Config{Path: local.Memory, Clock: now, Retention: week, PollInterval: 50 * time.Millisecond})
	}, worldtest.WithClock(now, func(d time.Duration) { offset.Add(int64(d)) }), worldtest.WithRetention(week))
}
