package awsworld

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// FuzzOpenSteps checks the run view that holds open steps: it is billed the
// write units it would be without them, it decodes to the same run and the
// steps it kept, and every candidate is either kept or returned for an item.
func FuzzOpenSteps(f *testing.F) {
	f.Add(uint16(0), uint16(10), uint16(0), uint8(1))
	f.Add(uint16(400), uint16(300), uint16(50), uint8(3))
	f.Add(uint16(900), uint16(10), uint16(10), uint8(2))
	f.Add(uint16(1500), uint16(2000), uint16(10), uint8(4))
	f.Fuzz(func(t *testing.T, runInput, stepInput, stepInputStep uint16, count uint8) {
		w := &World{shards: DefaultListShards}
		run := &worlds.Run{RunID: "r", WorkflowName: "flows.A", Status: worlds.RunRunning, EventCount: 9,
			Input: json.RawMessage(`"` + strings.Repeat("i", int(runInput)) + `"`), CreatedAt: time.Unix(1, 0).UTC()}
		meta := w.runItem(run, nil)
		units := (itemSize(meta) + 1023) / 1024
		var candidates []openStep
		for i := range int(count % 8) {
			size := int(stepInput) + i*int(stepInputStep)
			candidates = append(candidates, openStep{Seq: int64(9 - i), Step: worlds.Step{RunID: "r", StepID: fmt.Sprintf("s%d", i), StepName: "a",
				Status: worlds.StepRunning, Input: json.RawMessage(`"` + strings.Repeat("x", size%5000) + `"`)}})
		}
		evicted := placeOpenSteps(meta, append([]openStep(nil), candidates...))
		if got := (itemSize(meta) + 1023) / 1024; got != units {
			t.Fatalf("run view billed %d KB with its steps, %d without", got, units)
		}
		got, open, err := decodeRunData(meta)
		if err != nil {
			t.Fatal(err)
		}
		if got.RunID != run.RunID || string(got.Input) != string(run.Input) {
			t.Fatalf("decoded run %+v", got)
		}
		if len(open)+len(evicted) != len(candidates) {
			t.Fatalf("%d kept + %d evicted of %d", len(open), len(evicted), len(candidates))
		}
		for _, c := range candidates {
			o, kept := open[c.Step.StepID]
			out := false
			for _, e := range evicted {
				out = out || e.Step.StepID == c.Step.StepID
			}
			if kept == out {
				t.Fatalf("step %s kept %v, evicted %v", c.Step.StepID, kept, out)
			}
			if kept && (o.Seq != c.Seq || string(o.Step.Input) != string(c.Step.Input)) {
				t.Fatalf("step %s decoded as %+v", c.Step.StepID, o)
			}
		}
	})
}
