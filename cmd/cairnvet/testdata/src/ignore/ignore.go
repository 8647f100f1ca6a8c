package ignore

import (
	"time"

	"github.com/cairn-go/cairn/workflow"
)

type Sum struct{}

func (Sum) Run(ctx workflow.Context, in map[string]int) (int, error) {
	total := 0
	for _, v := range in { //cairnvet:ignore summing is independent of the order
		total += v
	}

	// A directive on a line of its own covers the next line only.
	//cairnvet:ignore the time is only logged, never branched on
	_ = time.Now()
	_ = time.Now() // want `time\.Now`

	// A trailing directive covers its own line only.
	_ = time.Now() //cairnvet:ignore a trailing directive covers its own line only
	_ = time.Now() // want `time\.Now`

	// A directive without a reason is reported and suppresses nothing.
	/* want `//cairnvet:ignore needs a reason` */ //cairnvet:ignore
	_ = time.Now()                                // want `time\.Now`

	//cairnvet:ignored is another word, not the directive
	_ = time.Now() // want `time\.Now`

	logStart()
	return total, nil
}

// logStart is skipped as a whole, and so is what it alone reaches.
//
//cairnvet:ignore the start time goes to the log only
func logStart() {
	_ = time.Now()
	stamp()
}

func stamp() { _ = time.Now() }
