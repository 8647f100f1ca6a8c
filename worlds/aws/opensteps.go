package awsworld

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// The run view (META) holds more than the run:
//
//   - Steps without an item of their own. Every append writes the run view, so
//     a step created, started, heartbeating or retrying there costs no write of
//     its own. A transactional append keeps unfinished steps there while the run
//     view stays within the write units it is billed anyway, and writes the
//     others, and every step it finishes, to their STEP# items.
//   - The tail: the events of the last append, when that append was written as
//     one conditional PutItem of the run view instead of a transaction (see
//     fastView), and of the appends before it whose tails it carried on. Such an
//     append also leaves the steps it finished in the run view. Steps created
//     within the tail are not listed with the others: the tail holds all their
//     events, and decoding rebuilds them (deriveTailSteps), finished or not.
//   - Waits (durable timers) created or completed by such appends, until they
//     are completed and written out to their WAIT# items, or a transaction
//     moves them there.
//
// Events of the tail, finished steps and completed waits are committed and never
// change: they are written out (the tail as the event pack it would have been,
// each step or wait as its item) with plain, idempotent puts before an append
// leaves them out of the run view. Unfinished steps and waits only ever move
// from the run view to their item, never back: a reader that finds one in
// neither, having read the item before the run view, reads the item again.
//
// A run view that holds anything stores its data as the JSON array
// [run, {"steps": [...], "waits": [...], "events": [...], "complete": true}]
// instead of the run's object, compressed as binary data (see compressData). Versions that predate
// the compression find no string data and fail to decode it, as the ones before
// them failed on the array, so they cannot append to the run and rewrite the
// view without what it holds.

// openStep is a step held in the run view, with the seq of its step_created.
type openStep struct {
	Seq  int64       `json:"seq"`
	Step worlds.Step `json:"step"`
}

// heldData is the second element of a run view's data array.
type heldData struct {
	Steps    []openStep        `json:"steps,omitempty"`
	Waits    []worlds.Wait     `json:"waits,omitempty"`
	Events   []json.RawMessage `json:"events,omitempty"`
	Complete bool              `json:"complete,omitempty"`
}

// held is what a run view holds beside the run: steps and waits by ID, and
// its tail of events.
type held struct {
	open  map[string]openStep
	waits map[string]worlds.Wait
	tail  []worlds.Event
	// carry is set when the next append written as the run view alone keeps
	// the tail there, beside its own events, instead of writing it out; see
	// carries.
	carry bool
	// complete is set when the run view holds every step of its run that has
	// an item: no run view of the run, this one or one before, left a step
	// out. A step the run view does not hold then does not exist, and its
	// item need not be read. Only the single-put appends keep it (fastView);
	// a run view without it says nothing.
	complete bool
}

// carryMax is the largest run view item (compressed, with its keys) whose tail
// the next single-put append carries: the view it writes is then likely still
// under 1 KB (an append of a step adds about 40 bytes), so its put costs no
// more than it would without the tail, and the tail's write-out is saved. When
// it does pass 1 KB, its second unit pays for what the write-out would have
// cost. Many appends' events then share one event pack.
const carryMax = 900

// carries reports whether the next single-put append carries the tail of a
// run view: a function of the stored item alone, so every writer decides
// alike. Deciding differently costs a write, never an event: an append that
// leaves a tail out of the run view writes it out first.
func carries(item map[string]types.AttributeValue, run *worlds.Run, tail []worlds.Event) bool {
	return len(tail) > 0 && !run.Status.Terminal() && itemSize(item) <= carryMax
}

// openSlack is what placeOpenSteps leaves unused of the run view's write units, for
// DynamoDB's per-attribute overhead that itemSize does not count.
const openSlack = 100

// decodeRunData reads the run view's data: the run and what it holds.
func decodeRunData(item map[string]types.AttributeValue) (*worlds.Run, held, error) {
	fail := func(err error) (*worlds.Run, held, error) {
		return nil, held{}, fmt.Errorf("awsworld: decode %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
	}
	data, err := dataJSON(item)
	if err != nil {
		return fail(err)
	}
	if !strings.HasPrefix(data, "[") {
		var run worlds.Run
		if err := json.Unmarshal([]byte(data), &run); err != nil {
			return fail(err)
		}
		return &run, held{}, nil
	}
	var run worlds.Run
	var second json.RawMessage
	if err := json.Unmarshal([]byte(data), &[]any{&run, &second}); err != nil {
		return fail(err)
	}
	var data2 heldData
	if strings.HasPrefix(strings.TrimSpace(string(second)), "[") { // the steps alone, as first stored
		err = json.Unmarshal(second, &data2.Steps)
	} else {
		err = json.Unmarshal(second, &data2)
	}
	if err != nil {
		return fail(err)
	}
	h := held{open: make(map[string]openStep, len(data2.Steps)), tail: make([]worlds.Event, len(data2.Events)), complete: data2.Complete}
	for _, o := range data2.Steps {
		h.open[o.Step.StepID] = o
	}
	if len(data2.Waits) > 0 {
		h.waits = make(map[string]worlds.Wait, len(data2.Waits))
		for _, wt := range data2.Waits {
			h.waits[wt.WaitID] = wt
		}
	}
	for i, raw := range data2.Events {
		if err := json.Unmarshal(raw, &h.tail[i]); err != nil {
			return fail(err)
		}
	}
	if err := deriveTailSteps(h); err != nil {
		return fail(err)
	}
	h.carry = carries(item, &run, h.tail)
	return &run, h, nil
}

// deriveTailSteps adds to h.open the steps created within its tail, which the
// run view does not list: the tail holds every event of theirs, and
// worlds.StepAfter rebuilds them as the appends recorded them. A step listed
// anyway (as fastView once wrote them) stays as listed.
func deriveTailSteps(h held) error {
	var derived map[string]bool
	for _, ev := range h.tail {
		if !worlds.NeedsFor(ev.Type).Step {
			continue
		}
		o, ok := h.open[ev.CorrelationID]
		var cur *worlds.Step
		switch {
		case ev.Type == worlds.EventStepCreated && !ok:
			if derived == nil {
				derived = map[string]bool{}
			}
			derived[ev.CorrelationID] = true
			o = openStep{Seq: ev.Seq}
		case derived[ev.CorrelationID]:
			cur = &o.Step
		default:
			continue
		}
		step, err := worlds.StepAfter(cur, ev)
		if err != nil {
			return fmt.Errorf("rebuild step %s from event %d: %w", ev.CorrelationID, ev.Seq, err)
		}
		o.Step = *step
		h.open[ev.CorrelationID] = o
	}
	return nil
}

// knows reports whether h, a run view's holdings (nil for none known), tells
// whether stepID exists without a read of its item: h holds the step, or
// every step that has an item.
func (h *held) knows(stepID string) bool {
	if h == nil {
		return false
	}
	_, ok := h.open[stepID]
	return ok || h.complete
}

// inTail reports whether a step created at seq is rebuilt from tail.
func inTail(seq int64, tail []worlds.Event) bool {
	return len(tail) > 0 && seq >= tail[0].Seq
}

// setHeld stores steps, waits and events (each already JSON) in meta's data
// beside the run, compressed.
func setHeld(meta map[string]types.AttributeValue, steps, waits, events []string) {
	if len(steps)+len(waits)+len(events) > 0 {
		meta[attrData] = compressData(heldJSON(getS(meta, attrData), steps, waits, events, false))
	}
}

// heldJSON is the data of a run view that holds steps, waits or events: the
// array [run, {"steps": [...], "waits": [...], "events": [...], "complete": true}],
// without the fields that hold nothing.
func heldJSON(run string, steps, waits, events []string, complete bool) string {
	var fields []string
	for _, f := range []struct {
		name  string
		items []string
	}{{"steps", steps}, {"waits", waits}, {"events", events}} {
		if len(f.items) > 0 {
			fields = append(fields, `"`+f.name+`":[`+strings.Join(f.items, ",")+"]")
		}
	}
	if complete {
		fields = append(fields, `"complete":true`)
	}
	return "[" + run + ",{" + strings.Join(fields, ",") + "}]"
}

// heldOverhead is what setHeld adds to the data around the steps it holds.
var heldOverhead = len(`[,{"steps":[]}]`)

func marshalOpen(o openStep) string {
	b, err := json.Marshal(o)
	if err != nil { // the model types always marshal
		panic(err)
	}
	return string(b)
}

// placeOpenSteps puts into meta, in creation order, the open steps that fit
// within the write units meta is billed without them, and returns the rest,
// which need items of their own.
func placeOpenSteps(meta map[string]types.AttributeValue, candidates []openStep) (evicted []openStep) {
	if len(candidates) == 0 {
		return nil
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Seq < candidates[j].Seq })
	size := itemSize(meta)
	budget := (size+1023)/1024*1024 - openSlack
	used := size + heldOverhead
	var kept []string
	for _, o := range candidates {
		b := marshalOpen(o)
		if used+len(b)+1 > budget {
			evicted = append(evicted, o)
			continue
		}
		used += len(b) + 1
		kept = append(kept, b)
	}
	setHeld(meta, kept, nil, nil)
	return evicted
}
