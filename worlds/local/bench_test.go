package local_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// BenchmarkAppend appends one event per operation to one run, on a WAL file and
// in memory.
func BenchmarkAppend(b *testing.B) {
	b.Run("file", func(b *testing.B) { benchmarkAppend(b, filepath.Join(b.TempDir(), "bench.db")) })
	b.Run("memory", func(b *testing.B) { benchmarkAppend(b, local.Memory) })
}

func benchmarkAppend(b *testing.B, path string) {
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(ctx, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}, worlds.Event{Type: worlds.EventRunStarted}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		ev := worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s" + strconv.Itoa(i), StepName: "step"}
		if _, err := w.Append(ctx, "r", ev); err != nil {
			b.Fatal(err)
		}
	}
}
