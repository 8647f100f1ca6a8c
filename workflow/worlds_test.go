package workflow_test

import (
	"context"
	"strings"
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
		{"ChildCancelThroughRPC", testChildCancelThroughRPC},
		{"ChildCancelledAlone", testChildCancelledAlone},
		{"ContinueAsNew", testContinueAsNew},
		{"ChildContinuesAsNew", testChildContinuesAsNew},
		{"Version", testVersion},
		{"UpsertAttributes", testUpsertAttributes},
		{"Query", testQuery},
		{"SelectHookBeforeTimeout", testSelectHookBeforeTimeout},
		{"SelectTimeout", testSelectTimeout},
		{"SelectSteps", testSelectSteps},
		{"SelectLoserAtEnd", testSelectLoserAtEnd},
		{"PanicBlocksUntilFixed", testPanicBlocksUntilFixed},
		{"StepFromPlainGoroutines", testStepFromPlainGoroutines},
		{"StuckCodeEndsDelivery", testStuckCodeEndsDelivery},
		{"CancelIntoCode", testCancelIntoCode},
		{"CancelRunningStep", testCancelRunningStep},
		{"SignalsBuffered", testSignalsBuffered},
		{"SignalSelect", testSignalSelect},
		{"SignalWithStart", testSignalWithStart},
	}
	for _, cache := range []string{"cache", "nocache"} {
		for _, w := range testWorlds {
			for _, tc := range tests {
				t.Run(w.name+"/"+cache+"/"+tc.name, func(t *testing.T) { tc.f(t, w.open) })
			}
		}
	}
}

// cacheOff reports whether t runs in TestOnWorlds' pass without a run cache:
// serve then gives its client none, so every test runs both ways.
func cacheOff(t *testing.T) bool { return strings.Contains(t.Name(), "/nocache/") }
