package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/internal/testenv"
)

// faultyIdempotencyDB is the idempotency store's DynamoDB client when DynamoDB
// misbehaves: faultyDynamoDB's throttles and resets on every call, and
// conditional puts and updates that commit with their response lost.
//
// Fault kinds: those of faultyDynamoDB, ddb-lost-write also on PutItem and UpdateItem.
type faultyIdempotencyDB struct{ *faultyDynamoDB }

func (s faultyIdempotencyDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := s.faultyDynamoDB.PutItem(ctx, in, opts...)
	if err == nil && s.f.hit("ddb-lost-write") {
		return nil, connReset("PutItem")
	}
	return out, err
}

func (s faultyIdempotencyDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := s.faultyDynamoDB.UpdateItem(ctx, in, opts...)
	if err == nil && s.f.hit("ddb-lost-write") {
		return nil, connReset("UpdateItem")
	}
	return out, err
}

// TestIdempotencyUnderDynamoDBFaults sends each of 30 payments from three
// concurrent callers that retry until they get an answer, through the
// idempotency manager on DynamoDB Local while the store's calls are throttled,
// reset, or commit with their response lost. Every caller must get its
// payment's result. A payment may be charged again only after an execution
// whose completed record could not be written (the failure window the
// Powertools design leaves open, reported as a "update success"
// PersistenceError): extra charges can never exceed those.
func TestIdempotencyUnderDynamoDBFaults(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	table := testenv.UniqueName(t, "idem")
	if _, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	f := newFaults(s, map[string]float64{"ddb-throttle-write": 0.08, "ddb-throttle-read": 0.05, "ddb-lost-write": 0.08, "ddb-reset": 0.03})
	store, err := idynamodb.New(faultyIdempotencyDB{&faultyDynamoDB{DynamoDBAPI: db, f: f}}, idynamodb.Options{TableName: table})
	if err != nil {
		t.Fatal(err)
	}
	m, err := idempotency.New(store, idempotency.Options{KeyPrefix: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	type payment struct {
		Order int `json:"order"`
	}
	type receipt struct {
		Order   int `json:"order"`
		Charged int `json:"charged"`
	}
	const payments, callers = 30, 3
	var charges [payments]atomic.Int64
	var completionLost, attempts atomic.Int64
	errs := make(chan error, payments*callers)
	var wg sync.WaitGroup
	for i := range payments {
		for range callers {
			wg.Go(func() {
				for attempt := 0; ; attempt++ {
					attempts.Add(1)
					// The deadline is the execution's lease: a crashed or
					// unrecorded execution frees the key this soon.
					ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
					r, err := idempotency.Execute(ctx, m, payment{Order: i}, func(context.Context) (receipt, error) {
						charges[i].Add(1)
						return receipt{Order: i, Charged: 100 * i}, nil
					})
					cancel()
					if err == nil {
						if r.Order != i || r.Charged != 100*i {
							errs <- fmt.Errorf("payment %d: got receipt %+v", i, r)
						}
						return
					}
					var pe *idempotency.PersistenceError
					if errors.As(err, &pe) && pe.Op == "update success" {
						completionLost.Add(1)
					}
					if attempt > 200 {
						errs <- fmt.Errorf("payment %d: still failing after %d attempts: %w", i, attempt, err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("seed %d: %v", s, err)
	}
	extra := int64(0)
	for i := range payments {
		n := charges[i].Load()
		if n == 0 {
			t.Fatalf("seed %d: payment %d never charged", s, i)
		}
		extra += n - 1
	}
	t.Logf("payments=%d callers=%d calls=%d extra charges=%d completions not recorded=%d faults=%s",
		payments, callers, attempts.Load(), extra, completionLost.Load(), f)
	if extra > completionLost.Load() {
		t.Fatalf("seed %d: %d extra charges but only %d executions whose completion was not recorded", s, extra, completionLost.Load())
	}
	if f.count("ddb-throttle-write", "ddb-lost-write") == 0 {
		t.Fatalf("seed %d: no write fault injected (%s); the run proved nothing", s, f)
	}
}
