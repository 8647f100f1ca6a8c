package awsworld

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// FuzzOpenSteps checks the run view that holds open steps: it is billed no
// more write units than it would be without them, it decodes to the same run and the
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
		if got := (itemSize(meta) + 1023) / 1024; got > units {
			t.Fatalf("run view billed %d KB with its steps, %d without", got, units)
		}
		got, h, err := decodeRunData(meta)
		open := h.open
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

// TestRunViewShapes checks the decoding of every shape of the run view's data,
// and that the versions before each shape refuse the next.
func TestRunViewShapes(t *testing.T) {
	t.Parallel()
	w := &World{shards: DefaultListShards}
	run := &worlds.Run{RunID: "r", WorkflowName: "flows.A", Status: worlds.RunRunning, EventCount: 7, CreatedAt: time.Unix(1, 0).UTC()}
	step := openStep{Seq: 6, Step: worlds.Step{RunID: "r", StepID: "s2", StepName: "a", Status: worlds.StepRunning, Attempt: 1}}
	done := openStep{Seq: 3, Step: worlds.Step{RunID: "r", StepID: "s1", StepName: "a", Status: worlds.StepCompleted, Output: json.RawMessage(`2`)}}
	ev := worlds.Event{RunID: "r", Seq: 7, Type: worlds.EventStepStarted, CorrelationID: "s2", Attempt: 1, CreatedAt: time.Unix(2, 0).UTC()}
	evJSON, _ := json.Marshal(ev)
	runJSON, _ := json.Marshal(run)
	wait := worlds.Wait{RunID: "r", WaitID: "w1", Status: worlds.WaitWaiting, ResumeAt: time.Unix(9, 0).UTC()}
	waitJSON, _ := json.Marshal(wait)
	for _, tc := range []struct {
		name      string
		data      string
		steps     []string
		tailSeqs  []int64
		wait      bool
		olderFail bool // a version that expects [run, [steps]] refuses it
	}{
		{"run alone", string(runJSON), nil, nil, false, false},
		{"steps alone, as first stored", "[" + string(runJSON) + ",[" + marshalOpen(step) + "]]", []string{"s2"}, nil, false, false},
		{"steps", "", []string{"s1", "s2"}, nil, false, true},
		{"steps and tail", "", []string{"s1", "s2"}, []int64{7}, false, true},
		{"tail alone", "", nil, []int64{7}, false, true},
		{"a wait", "", nil, nil, true, true},
		{"steps, a wait and tail", "", []string{"s1", "s2"}, []int64{7}, true, true},
	} {
		meta := w.runItem(run, nil)
		if tc.data != "" {
			meta[attrData] = s(tc.data)
		} else {
			var steps, waits, events []string
			if tc.wait {
				waits = []string{string(waitJSON)}
			}
			if len(tc.steps) > 0 {
				steps = []string{marshalOpen(done), marshalOpen(step)}
			}
			if len(tc.tailSeqs) > 0 {
				events = []string{string(evJSON)}
			}
			setHeld(meta, steps, waits, events)
		}
		if _, compressed := meta[attrData].(*types.AttributeValueMemberB); compressed != (tc.data == "") {
			t.Fatalf("%s: data stored compressed: %v", tc.name, compressed)
		}
		got, h, err := decodeRunData(meta)
		open, tail := h.open, h.tail
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.RunID != "r" || got.EventCount != 7 {
			t.Fatalf("%s: run %+v", tc.name, got)
		}
		var ids []string
		for id := range open {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if fmt.Sprint(ids) != fmt.Sprint(tc.steps) && !(len(ids) == 0 && len(tc.steps) == 0) {
			t.Fatalf("%s: steps %v, want %v", tc.name, ids, tc.steps)
		}
		if got, ok := h.waits["w1"]; ok != tc.wait || (ok && !got.ResumeAt.Equal(wait.ResumeAt)) {
			t.Fatalf("%s: wait %+v (held %v), want held %v", tc.name, got, ok, tc.wait)
		}
		var seqs []int64
		for _, e := range tail {
			seqs = append(seqs, e.Seq)
			if b, _ := json.Marshal(e); string(b) != string(evJSON) {
				t.Fatalf("%s: tail event %+v, want %+v", tc.name, e, ev)
			}
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tc.tailSeqs) && !(len(seqs) == 0 && len(tc.tailSeqs) == 0) {
			t.Fatalf("%s: tail %v, want %v", tc.name, seqs, tc.tailSeqs)
		}
		data := getS(meta, attrData)
		var older worlds.Run
		if err := json.Unmarshal([]byte(data), &older); (err == nil) != (tc.name == "run alone") {
			t.Fatalf("%s: the oldest decoder (one run object) returned %v", tc.name, err)
		}
		var list []openStep
		if err := json.Unmarshal([]byte(data), &[]any{&older, &list}); tc.olderFail && err == nil {
			t.Fatalf("%s: a version that holds steps alone decoded it", tc.name)
		}
	}
}

// FuzzRunViewData feeds stored run view data of any shape to the decoder: it
// returns an error or a run, never panics, and what it decodes from a run view
// holding steps and events encodes back to the same steps and events.
func FuzzRunViewData(f *testing.F) {
	w := &World{shards: DefaultListShards}
	run := &worlds.Run{RunID: "r", WorkflowName: "flows.A", Status: worlds.RunRunning, EventCount: 7}
	meta := w.runItem(run, nil)
	setHeld(meta, []string{marshalOpen(openStep{Seq: 6, Step: worlds.Step{RunID: "r", StepID: "s2", StepName: "a", Status: worlds.StepRunning}})},
		[]string{`{"runId":"r","waitId":"w1","status":"waiting"}`},
		[]string{`{"runId":"r","seq":7,"type":"step_started","correlationId":"s2","attempt":1}`})
	held, err := dataJSON(meta)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(held)
	f.Add(`{"runId":"r"}`)
	f.Add(`[{"runId":"r"},[{"seq":3,"step":{"stepId":"s1"}}]]`)
	f.Add(`[{"runId":"r"},{"events":[{"seq":1}]}]`)
	f.Add(`[{"runId":"r"},{"steps":null,"events":[null]}]`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, data string) {
		item := w.runItem(run, nil)
		item[attrData] = s(data)
		got, h, err := decodeRunData(item)
		open, tail := h.open, h.tail
		if err != nil {
			return
		}
		if got == nil {
			t.Fatal("no run and no error")
		}
		if !strings.HasPrefix(data, "[") {
			return
		}
		runJSON, _ := json.Marshal(got)
		var steps, events []string
		var ordered []openStep
		for _, o := range open {
			ordered = append(ordered, o)
		}
		sort.Slice(ordered, func(i, j int) bool { return ordered[i].Step.StepID < ordered[j].Step.StepID })
		for _, o := range ordered {
			steps = append(steps, marshalOpen(o))
		}
		for _, ev := range tail {
			b, _ := json.Marshal(ev)
			events = append(events, string(b))
		}
		again := w.runItem(run, nil)
		again[attrData] = s(string(runJSON))
		var waits []string
		for _, id := range slices.Sorted(maps.Keys(h.waits)) {
			wt := h.waits[id]
			b, _ := json.Marshal(&wt)
			waits = append(waits, string(b))
		}
		setHeld(again, steps, waits, events)
		_, h2, err := decodeRunData(again)
		open2, tail2 := h2.open, h2.tail
		if err != nil {
			t.Fatalf("re-encoded %+v: %v", again[attrData], err)
		}
		if len(open2) != len(open) || len(tail2) != len(tail) || len(h2.waits) != len(h.waits) {
			t.Fatalf("round trip: %d steps, %d events; want %d, %d", len(open2), len(tail2), len(open), len(tail))
		}
		for id, o := range open {
			if marshalOpen(open2[id]) != marshalOpen(o) {
				t.Fatalf("step %s: %s, want %s", id, marshalOpen(open2[id]), marshalOpen(o))
			}
		}
	})
}

// FuzzCompressedViewData feeds any binary data to the run view decoder: it
// returns an error or a run, never panics, and data compressed by the World
// inflates back to what it was.
func FuzzCompressedViewData(f *testing.F) {
	w := &World{shards: DefaultListShards}
	run := &worlds.Run{RunID: "r", WorkflowName: "flows.A", Status: worlds.RunRunning, EventCount: 7}
	f.Add(compressData(`[{"runId":"r"},{"events":[{"seq":1}]}]`).(*types.AttributeValueMemberB).Value)
	f.Add([]byte{})
	f.Add([]byte{viewFormatDeflate1})
	f.Add([]byte{2, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		item := w.runItem(run, nil)
		item[attrData] = &types.AttributeValueMemberB{Value: data}
		if got, _, err := decodeRunData(item); err == nil && got == nil {
			t.Fatal("no run and no error")
		}
		item[attrData] = compressData(string(data))
		back, err := dataJSON(item)
		if err != nil || back != string(data) {
			t.Fatalf("compressed %q inflates to %q, %v", data, back, err)
		}
	})
}

func TestCompressedViewDataErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "unknown data format -1"},
		{"newer format", []byte{9, 1, 2}, "unknown data format 9"},
		{"truncated", compressData(`[{"runId":"r"},{"events":[]}]`).(*types.AttributeValueMemberB).Value[:5], "inflate data"},
	} {
		item := map[string]types.AttributeValue{attrPK: s("RUN#r"), attrSK: s(metaSK), attrData: &types.AttributeValueMemberB{Value: tc.data}}
		_, _, err := decodeRunData(item)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "RUN#r/META") {
			t.Errorf("%s: %v, want an error naming the item and %q", tc.name, err, tc.want)
		}
		if tc.name != "truncated" && !errors.Is(err, errViewFormat) {
			t.Errorf("%s: %v is not errViewFormat", tc.name, err)
		}
	}
}
