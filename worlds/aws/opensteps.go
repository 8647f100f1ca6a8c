package awsworld

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// A step that is not finished is kept in the run view rather than in an item
// of its own, as long as the run view stays within the write units it is
// billed anyway. Every append writes the run view, so a step created, started,
// heartbeating or retrying there costs no write of its own; it gets its STEP#
// item once, when it finishes (or when it no longer fits). An inline step thus
// writes three transactional items instead of four, 6 write units instead of 8.
//
// A run view holding steps stores its data as the JSON array [run, [open
// steps]] instead of the run's object. A version that predates this fails to
// decode it, so it cannot append to the run and rewrite the view without them.
//
// Steps only ever move from the run view to their item, never back: a reader
// that finds a step in neither, having read the item before the run view, reads
// the item again.

// openStep is a step held in the run view, with the seq of its step_created.
type openStep struct {
	Seq  int64       `json:"seq"`
	Step worlds.Step `json:"step"`
}

// openSlack is what placeOpenSteps leaves unused of the run view's write units, for
// DynamoDB's per-attribute overhead that itemSize does not count.
const openSlack = 100

// decodeRunData reads the run view's data: the run, and its open steps by step ID.
func decodeRunData(item map[string]types.AttributeValue) (*worlds.Run, map[string]openStep, error) {
	data := getS(item, attrData)
	if !strings.HasPrefix(data, "[") {
		run, err := decodeData[worlds.Run](item)
		return run, nil, err
	}
	var run worlds.Run
	var list []openStep
	if err := json.Unmarshal([]byte(data), &[]any{&run, &list}); err != nil {
		return nil, nil, fmt.Errorf("awsworld: decode %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
	}
	open := make(map[string]openStep, len(list))
	for _, o := range list {
		open[o.Step.StepID] = o
	}
	return &run, open, nil
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
	used := size + len("[,[]]")
	var kept []string
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
		kept = append(kept, string(b))
	}
	if len(kept) > 0 {
		meta[attrData] = s("[" + getS(meta, attrData) + ",[" + strings.Join(kept, ",") + "]]")
	}
	return evicted
}
