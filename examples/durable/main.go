// Command durable is a Lambda durable function built on cairn's durable
// adapter: it reserves stock for every line of an order in parallel (at most
// four at a time), waits a cooling-off period without paying for the idle time,
// then charges once, through the idempotency store (durableidem). Build it for provided.al2023 (see README.md); locally,
// main_test.go runs this binary through a Lambda Runtime API harness against
// AWS's local checkpoint server.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durableidem"
	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/idempotency/memory"
)

// Order is the execution's input.
type Order struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

// Receipt is its result.
type Receipt struct {
	Order    string   `json:"order"`
	Reserved []string `json:"reserved"`
	Charge   string   `json:"charge"`
}

// process is the durable function; charges records its payment calls.
func process(charges *idempotency.Manager) func(context.Context, *durable.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, dc *durable.Context, input json.RawMessage) (any, error) {
		return fulfil(ctx, dc, charges, input)
	}
}

func fulfil(ctx context.Context, dc *durable.Context, charges *idempotency.Manager, input json.RawMessage) (any, error) {
	var o Order
	if err := json.Unmarshal(input, &o); err != nil {
		return nil, durable.Fatal(fmt.Errorf("order: %w", err))
	}
	log := dc.Logger() // drops records while replaying
	log.Info("order received", "order", o.ID, "lines", len(o.Lines))
	res, err := durable.Map(dc, "reserve", o.Lines, func(ctx context.Context, c *durable.Context, sku string, _ int) (string, error) {
		return durable.Step(c, "reserve-line", func(ctx context.Context) (string, error) {
			// Call the inventory service here, with durable.IdempotencyKey(ctx)
			// as its idempotency key.
			return "rsv-" + sku, nil
		})
	}, durable.BatchOptions{MaxConcurrency: 4})
	if err != nil {
		return nil, err
	}
	if err := res.Err(); err != nil {
		// A failed line is in the batch's result; the order fails with it.
		return nil, err
	}
	if err := dc.Wait("cooling-off", cooling()); err != nil {
		return nil, err
	}
	charge, err := durable.Step(dc, "charge", func(ctx context.Context) (string, error) {
		// The payment API takes no idempotency key: a charge whose SUCCEED
		// checkpoint was lost would be repeated by the step's next run. Through
		// the idempotency store, keyed by execution ARN and operation ID, the
		// next run gets the first charge's ID back.
		return durableidem.Do(ctx, charges, o, func(ctx context.Context, o Order) (string, error) {
			return "ch-" + o.ID, nil
		})
	})
	if err != nil {
		return nil, err
	}
	r := Receipt{Order: o.ID, Charge: charge}
	for _, it := range res.All {
		r.Reserved = append(r.Reserved, it.Result)
	}
	log.Info("order charged", "order", o.ID)
	return r, nil
}

// cooling is the wait before charging; COOLING_OFF (a Go duration) overrides it.
func cooling() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("COOLING_OFF")); err == nil {
		return d
	}
	return 30 * time.Minute
}

// openCharges opens the record of payment calls: the DynamoDB table
// CHARGES_TABLE names (Powertools' layout, key attribute "id"), else memory,
// which only protects re-runs within one warm process.
func openCharges(ctx context.Context, cfg aws.Config, log *slog.Logger) (*idempotency.Manager, error) {
	var store idempotency.Store = memory.New()
	if table := os.Getenv("CHARGES_TABLE"); table != "" {
		s, err := idynamodb.New(dynamodb.NewFromConfig(cfg), idynamodb.Options{TableName: table})
		if err != nil {
			return nil, err
		}
		store = s
	}
	return idempotency.New(store, idempotency.Options{KeyPrefix: "durable-charge", EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input", Logger: log})
}

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// LoadDefaultConfig honours AWS_ENDPOINT_URL_LAMBDA, which the local test
	// points at the checkpoint server; in Lambda it finds the function's role.
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		logger.Error("aws config", "err", err)
		os.Exit(1)
	}
	charges, err := openCharges(context.Background(), cfg, logger)
	if err != nil {
		logger.Error("idempotency store", "err", err)
		os.Exit(1)
	}
	h, err := durable.NewHandler(lambda.NewFromConfig(cfg), process(charges), durable.Options{Logger: logger})
	if err != nil {
		logger.Error("durable handler", "err", err)
		os.Exit(1)
	}
	awslambda.Start(h.Invoke)
}
