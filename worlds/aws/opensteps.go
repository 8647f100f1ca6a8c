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
//     fastView). Such an append also leaves the steps it finished in the run view.
//
// Events of the tail and finished steps are committed and never change: the next
// append writes them out (the tail as the event pack it would have been, each
// finished step as its item) with plain, idempotent puts before its own write,
// which leaves them out. Unfinished steps only ever move from the run view to
// their item, never back: a reader that finds a step in neither, having read the
// item before the run view, reads the item again.
//
// A run view that holds anything stores its data as the JSON array
// [run, {"steps": [...], "events": [...]}] instead of the run's object. Versions
// that predate it fail to decode that (the oldest expect an object, the next an
// array of steps as the second element), so they cannot append to the run and
// rewrite the view without what it holds.

// openStep is a step held in the run view, with the seq of its step_created.
type openStep struct {
	Seq  int64       `json:"seq"`
	Step worlds.Step `json:"step"`
}

// heldData is the second element of a run view's data array.
type heldData struct {
	Steps  []openStep        `json:"steps,omitempty"`
	Events []json.RawMessage `json:"events,omitempty"`
}

// openSlack is what placeOpenSteps leaves unused of the run view's write units, for
// DynamoDB's per-attribute overhead that itemSize does not count.
const openSlack = 100

// decodeRunData reads the run view's data: the run, the steps it holds by step
// ID, and its tail of events.
func decodeRunData(item map[string]types.AttributeValue) (*worlds.Run, map[string]openStep, []worlds.Event, error) {
	data := getS(item, attrData)
	if !strings.HasPrefix(data, "[") {
		run, err := decodeData[worlds.Run](item)
		return run, nil, nil, err
	}
	fail := func(err error) (*worlds.Run, map[string]openStep, []worlds.Event, error) {
		return nil, nil, nil, fmt.Errorf("awsworld: decode %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
	}
	var run worlds.Run
	var second json.RawMessage
	if err := json.Unmarshal([]byte(data), &[]any{&run, &second}); err != nil {
		return fail(err)
	}
	var held heldData
	var err error
	if strings.HasPrefix(strings.TrimSpace(string(second)), "[") { // the steps alone, as first stored
		err = json.Unmarshal(second, &held.Steps)
	} else {
		err = json.Unmarshal(second, &held)
	}
	if err != nil {
		return fail(err)
	}
	open := make(map[string]openStep, len(held.Steps))
	for _, o := range held.Steps {
		open[o.Step.StepID] = o
	}
	tail := make([]worlds.Event, len(held.Events))
	for i, raw := range held.Events {
		if err := json.Unmarshal(raw, &tail[i]); err != nil {
			return fail(err)
		}
	}
	return &run, open, tail, nil
}

// setHeld stores steps and events (each already JSON) in meta's data beside the run.
func setHeld(meta map[string]types.AttributeValue, steps, events []string) {
	if len(steps) == 0 && len(events) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("[" + getS(meta, attrData) + ",{")
	if len(steps) > 0 {
		b.WriteString(`"steps":[` + strings.Join(steps, ",") + "]")
	}
	if len(events) > 0 {
		if len(steps) > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"events":[` + strings.Join(events, ",") + "]")
	}
	b.WriteString("}]")
	meta[attrData] = s(b.String())
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
	setHeld(meta, kept, nil)
	return evicted
}
