// Package vetdurable is a durable function with findings, checked through go vet
// against the real durable package.
package vetdurable

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/cairn-go/cairn/durable"
)

var _ durable.Func = Order

func Order(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
	size, err := durable.Step(dc, "stat", func(ctx context.Context) (int64, error) {
		fi, err := os.Stat("order.json")
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	})
	if err != nil {
		return nil, err
	}
	_, err = durable.WaitForCallback[string](dc, "approve", time.Hour, func(ctx context.Context, callbackID string) error {
		_, err := os.Stdout.WriteString(callbackID)
		return err
	})
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	started := time.Now() //cairnvet:ignore logged only
	dc.Logger().Info("order", "started", started)
	return size + weigh(map[string]int64{"a": 1}), nil
}

func weigh(m map[string]int64) int64 {
	var total int64
	for _, v := range m {
		total += v
	}
	return total
}
