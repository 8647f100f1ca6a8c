package lambdaignore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cairn-go/cairn/durable"
)

func Sum(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
	counts := map[string]int{}
	total := 0
	for _, v := range counts { //cairnvet:ignore summing is independent of the order
		total += v
	}

	// A directive on a line of its own covers the next line only.
	//cairnvet:ignore the time is only logged, never branched on
	_ = time.Now()
	_ = time.Now() // want `time\.Now in durable code`

	// A trailing directive covers its own line only.
	_ = time.Now() //cairnvet:ignore a trailing directive covers its own line only
	_ = time.Now() // want `time\.Now in durable code`

	// A directive without a reason is reported and suppresses nothing.
	/* want `//cairnvet:ignore needs a reason` */ //cairnvet:ignore
	_ = time.Now()                                // want `time\.Now in durable code`

	// In a literal root too.
	_, _ = durable.RunInChildContext(dc, "child", func(ctx context.Context, child *durable.Context) (int, error) {
		_ = time.Now() //cairnvet:ignore logged only
		_ = time.Now() // want `time\.Now in durable code`
		return 0, nil
	})

	logStart(dc)
	return total, nil
}

// logStart is skipped as a whole, and so is what it alone reaches.
//
//cairnvet:ignore the start time goes to the log only
func logStart(dc *durable.Context) {
	dc.Logger().Info("start", "at", time.Now())
	stamp()
}

func stamp() { _ = time.Now() }
