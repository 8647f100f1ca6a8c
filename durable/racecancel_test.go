package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// TestRaceCancelledWaitFirst: a wait cancelled in an earlier invocation
// settled then, so a Race decided after a callback was answered later returns
// the cancelled wait, on both backends: the order is the recorded end times,
// and the checkpoint-server driver records an end time when it settles a
// cancelled wait, as the service and the fake do.
func TestRaceCancelledWaitFirst(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		var ids []string
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			cbs, err := callbacks(dc, 1, &ids)
			if err != nil {
				return nil, err
			}
			w, err := dc.StartWait("deadline", time.Hour)
			if err != nil {
				return nil, err
			}
			if err := w.Cancel(); err != nil {
				return nil, err
			}
			gate, err := durable.CreateCallback[string](dc, "gate", durable.CallbackOptions{})
			if err != nil {
				return nil, err
			}
			ids = append(ids, gate.ID())
			if _, err := gate.Result(); err != nil {
				return nil, err
			}
			i, err := durable.Race(dc, "first", cbs[0], w)
			return fmt.Sprint(i, " ", errors.Is(err, durable.ErrWaitCancelled)), nil
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		e.Elapse(1100 * time.Millisecond) // the answer comes after the cancellation
		if err := e.CompleteCallback(ctx, ids[0], `"a"`); err != nil {
			t.Fatal(err)
		}
		if err := e.CompleteCallback(ctx, ids[1], `"go"`); err != nil {
			t.Fatal(err)
		}
		out, err := e.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"1 true"` {
			t.Fatalf("%s %v %s, want the cancelled wait (1) to win", out.Status, err, aws.ToString(out.Result))
		}
	})
}
