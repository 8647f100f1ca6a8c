package awsworld

import (
	"cmp"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// DataJSON and ItemSize are dataJSON and itemSize, for the package's external
// tests.
var (
	DataJSON = dataJSON
	ItemSize = itemSize
)

// HeldSteps is the steps a run view item holds, listed or rebuilt from its
// tail, in creation order.
func HeldSteps(item map[string]types.AttributeValue) ([]worlds.Step, error) {
	st, err := decodeRun(item)
	if err != nil {
		return nil, err
	}
	open := slices.SortedFunc(maps.Values(st.open), func(a, b openStep) int { return cmp.Compare(a.Seq, b.Seq) })
	steps := make([]worlds.Step, len(open))
	for i, o := range open {
		steps[i] = o.Step
	}
	return steps, nil
}
