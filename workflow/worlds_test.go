package workflow_test

import (
	"context"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// testWorlds are the Worlds the runtime tests run on: the in-memory test World and
// the embedded SQLite World.
var testWorlds = []struct {
	name string
	open func(*testing.T) worlds.World
}{
	{"mem", func(*testing.T) worlds.World { return memworld.New() }},
	{"local", func(t *testing.T) worlds.World {
		w, err := local.Open(context.Background(), local.Config{Path: local.Memory})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return w
	}},
}

// TestOnWorlds runs each runtime test on every World, once with the run cache (the
// default) and once without. Each test calls t.Parallel.
func TestOnWorlds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func(*testing.T, func(*testing.T) worlds.World)
	}{
		{"Steps", testSteps},
		{"ParallelFutures", testParallelFutures},
		{"Sleep", testSleep},
		{"HookResume", testHookResume},
		{"HookConflict", testHookConflict},
		{"HookDispose", testHookDispose},
		{"Cancel", testCancel},
		{"Streams", testStreams},
		{"WebhookHandler", testWebhookHandler},
		{"ReplayAwareLoggingAndObserver", testReplayAwareLoggingAndObserver},
		{"NonSerialisableResult", testNonSerialisableResult},
		{"PanicAfterResume", testPanicAfterResume},
		{"LongChain", testLongChain},
		{"ChildRuns", testChildRuns},
		{"ChildCancel", testChildCancel},
		{"ChildCancelledAlone", testChildCancelledAlone},
		{"ContinueAsNew", testContinueAsNew},
		{"ChildContinuesAsNew", testChildContinuesAsNew},
	}
	for _, cache := range []string{"cache", "nocache"} {
		for _, w := range testWorlds {
			open := w.open
			if cache == "nocache" {
				open = func(t *testing.T) worlds.World {
					world := w.open(t)
					cacheOff.Store(world, true)
					t.Cleanup(func() { cacheOff.Delete(world) })
					return world
				}
			}
			for _, tc := range tests {
				t.Run(w.name+"/"+cache+"/"+tc.name, func(t *testing.T) { tc.f(t, open) })
			}
		}
	}
}

// cacheOff holds the Worlds TestOnWorlds opened for its pass without a run cache:
// serve gives their clients none, so every test runs both ways.
var cacheOff sync.Map
