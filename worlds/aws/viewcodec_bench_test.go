package awsworld

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// BenchmarkViewCodec compresses and inflates a step's usual run view: the run,
// its finished and running steps, and the three events of the append.
func BenchmarkViewCodec(b *testing.B) {
	w := &World{shards: DefaultListShards}
	t0 := time.Date(2026, 12, 7, 15, 16, 52, 944298645, time.UTC)
	t1 := t0.Add(44 * time.Millisecond)
	const id = "wrun_01a25114455fefa82d61e04b1785"
	run := &worlds.Run{RunID: id, WorkflowName: "bench.CostChain", Status: worlds.RunRunning, Input: json.RawMessage(`3`),
		CreatedAt: t0, StartedAt: &t0, UpdatedAt: t1, EventCount: 7}
	done := openStep{Seq: 3, Step: worlds.Step{RunID: id, StepID: "step_1", StepName: "step-0", Status: worlds.StepCompleted,
		Input: json.RawMessage(`0`), Output: json.RawMessage(`1`), Attempt: 1, CreatedAt: t0, StartedAt: &t0, CompletedAt: &t1, UpdatedAt: t1}}
	running := openStep{Seq: 6, Step: worlds.Step{RunID: id, StepID: "step_2", StepName: "step-1", Status: worlds.StepRunning,
		Input: json.RawMessage(`1`), Attempt: 1, CreatedAt: t1, StartedAt: &t1, UpdatedAt: t1}}
	var events []string
	for _, ev := range []worlds.Event{
		{RunID: id, Seq: 5, Type: worlds.EventStepCompleted, CorrelationID: "step_1", CreatedAt: t1, Output: json.RawMessage(`1`)},
		{RunID: id, Seq: 6, Type: worlds.EventStepCreated, CorrelationID: "step_2", CreatedAt: t1, StepName: "step-1", Input: json.RawMessage(`1`)},
		{RunID: id, Seq: 7, Type: worlds.EventStepStarted, CorrelationID: "step_2", CreatedAt: t1, Attempt: 1, DeliveryID: "start-" + id},
	} {
		b, _ := json.Marshal(ev)
		events = append(events, string(b))
	}
	meta := w.runItem(run, nil)
	setHeld(meta, []string{marshalOpen(done), marshalOpen(running)}, nil, events)
	data, err := dataJSON(meta)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compress", func(b *testing.B) {
		for b.Loop() {
			compressData(data)
		}
		b.ReportMetric(float64(len(data)), "json-bytes")
		b.ReportMetric(float64(attrSize(meta[attrData])), "stored-bytes")
	})
	b.Run("inflate", func(b *testing.B) {
		for b.Loop() {
			if _, err := dataJSON(meta); err != nil {
				b.Fatal(err)
			}
		}
	})
}
