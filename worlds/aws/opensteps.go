package awsworld

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// A step that is not finished is kept in the run view (attribute open_steps)
// rather than in an item of its own, as long as the run view stays within the
// write units it is billed anyway. Every append writes the run view, so a step
// created, started, heartbeating or retrying there costs no write of its own;
// it gets its STEP# item once, when it finishes (or when it no longer fits).
// An inline step thus writes three transactional items instead of four,
// 6 write units instead of 8.
//
// Steps only ever move from the run view to their item, never back: a reader
// that finds a step in neither, having read the item before the run view, reads
// the item again.

// openStep is a step held in the run view, with the seq of its step_created.
type openStep struct {
	Seq  int64       `json:"seq"`
	Step worlds.Step `json:"step"`
}

// openSlack is what openStepsFit leaves unused of the run view's write units, for
// DynamoDB's per-attribute overhead that itemSize does not count.
const openSlack = 100

// decodeOpenSteps reads the run view's open steps by step ID.
func decodeOpenSteps(item map[string]types.AttributeValue) (map[string]openStep, error) {
	data := getS(item, attrOpenSteps)
	if data == "" {
		return nil, nil
	}
	var list []openStep
	if err := json.Unmarshal([]byte(data), &list); err != nil {
		return nil, fmt.Errorf("awsworld: decode %s/%s %s: %w", getS(item, attrPK), getS(item, attrSK), attrOpenSteps, err)
	}
	open := make(map[string]openStep, len(list))
	for _, o := range list {
		open[o.Step.StepID] = o
	}
	return open, nil
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
	used := size + len(attrOpenSteps) + len("[]")
	var kept []json.RawMessage
	for _, o := range candidates {
		b, err := json.Marshal(o)
		if err != nil { // the model types always marshal
			panic(err)
		}
		if used+len(b)+1 > budget {
			evicted = append(evicted, o)
			continue
		}
		used += len(b) + 1
		kept = append(kept, b)
	}
	if len(kept) > 0 {
		b, _ := json.Marshal(kept)
		meta[attrOpenSteps] = s(string(b))
	}
	return evicted
}
