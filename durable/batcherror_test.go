package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestRebuiltBatchFailedItem: an oversized Map whose branch failed with an
// operation's failure (a failed chained invoke) rebuilds the same
// BatchResult as the live run, error fields included.
func TestRebuiltBatchFailedItem(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), func(op types.Operation) (string, error) {
			return "", errors.New("pricing down")
		})
		var mu sync.Mutex
		var results []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			res, err := durable.Map(dc, "items", []int{0, 1, 2}, func(ctx context.Context, c *durable.Context, n, i int) (string, error) {
				if i == 2 {
					return durable.Invoke[string](c, "price", "pricing", n)
				}
				return durable.Step(c, "make", func(context.Context) (string, error) { return strings.Repeat("m", 150*1024), nil })
			}, durable.BatchOptions{ToleratedFailures: -1})
			if err != nil {
				return nil, err
			}
			items := make([]string, len(res.All))
			for i, it := range res.All {
				items[i] = fmt.Sprintf("%s:%d", it.Status, len(it.Result))
				if it.Error != nil {
					items[i] += fmt.Sprintf(":%+v", *it.Error)
				}
			}
			mu.Lock()
			results = append(results, strings.Join(items, " "))
			mu.Unlock()
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || out.Status != durable.StatusSucceeded {
			t.Fatalf("%+v %v", out, err)
		}
		if len(results) != 2 || results[0] != results[1] {
			t.Errorf("live and rebuilt results differ:\n%s", strings.Join(results, "\n"))
		}
	})
}
