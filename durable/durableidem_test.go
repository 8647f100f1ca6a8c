package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durableidem"
	"github.com/cairn-go/cairn/durable/durabletest"
	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

// A durable step whose SUCCEED checkpoint is lost runs again in the next
// invocation; its call through durableidem returns the recorded response, so
// the charge happens once. The manager is configured as for workflowidem.
func TestDurableidemAfterLostCheckpoint(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		api := &lossyAPI{API: e.API(), lose: func(in *lambda.CheckpointDurableExecutionInput) bool {
			return in.Updates[0].Action == types.OperationActionSucceed
		}}
		mgr, err := idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{
			KeyPrefix: "charge", EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input", Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		bodies, charges := 0, 0
		h := newHandlerAPI(t, e, api, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			return durable.Step(dc, "charge", func(ctx context.Context) (string, error) {
				bodies++
				return durableidem.Do(ctx, mgr, 1250, func(_ context.Context, cents int) (string, error) {
					charges++
					return "ch-1", nil
				})
			})
		}, durable.Options{})
		if _, err := e.Drive(context.Background(), h, 5); !errors.Is(err, durable.ErrCheckpoint) {
			t.Fatalf("first invocation: %v", err)
		}
		out, err := e.Drive(context.Background(), h, 5)
		if err != nil || aws.ToString(out.Result) != `"ch-1"` {
			t.Fatal(out, err)
		}
		if bodies != 2 || charges != 1 {
			t.Errorf("step body ran %d times, charged %d times; want 2 and 1", bodies, charges)
		}
	})
	if _, err := durableidem.Do(context.Background(), nil, 1, func(context.Context, int) (int, error) { return 0, nil }); !errors.Is(err, durable.ErrNotInStep) {
		t.Errorf("outside a step: %v, want ErrNotInStep", err)
	}
}
