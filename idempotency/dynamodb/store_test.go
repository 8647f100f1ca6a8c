package dynamodb_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
	"github.com/cairn-go/cairn/internal/testenv"
)

func createTable(t *testing.T, c *dynamodb.Client, pk, sk string) string {
	t.Helper()
	name := testenv.UniqueName(t, "idem")
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}},
	}
	if sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	if _, err := c.CreateTable(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, c, name)
	return name
}

func TestStoreSuite(t *testing.T) {
	t.Parallel()
	c := testenv.DynamoDB(t)
	table := createTable(t, c, "id", "")
	idempotencytest.RunStoreSuite(t, func(t *testing.T) idempotency.Store {
		s, err := idynamodb.New(c, idynamodb.Options{TableName: table})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestStoreSuiteSortKeyLayout(t *testing.T) {
	t.Parallel()
	c := testenv.DynamoDB(t)
	table := createTable(t, c, "pk", "sk")
	idempotencytest.RunStoreSuite(t, func(t *testing.T) idempotency.Store {
		s, err := idynamodb.New(c, idynamodb.Options{TableName: table, KeyAttr: "pk", SortKeyAttr: "sk", StaticPKValue: "idempotency#suite"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestInteropWithReferenceItems writes the items the TypeScript library writes into
// DynamoDB Local and requires cairn to replay them, then requires the item cairn
// writes for the reference's first call to equal the reference's item.
func TestInteropWithReferenceItems(t *testing.T) {
	t.Parallel()
	c := testenv.DynamoDB(t)
	raw, err := os.ReadFile("../testdata/dynamodb.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		NowMillis int64      `json:"now_millis"`
		Scenarios []scenario `json:"scenarios"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(golden.NowMillis)
	byName := map[string]scenario{}
	for _, s := range golden.Scenarios {
		byName[s.Name] = s
	}
	ctx := context.Background()
	newManager := func(t *testing.T, table string, validation string) *idempotency.Manager {
		store, err := idynamodb.New(c, idynamodb.Options{TableName: table})
		if err != nil {
			t.Fatal(err)
		}
		m, err := idempotency.New(store, idempotency.Options{
			KeyPrefix: "process-order", EventKeyJMESPath: "id", PayloadValidationJMESPath: validation,
			Clock: func() time.Time { return now }, LookupEnv: func(string) (string, bool) { return "", false },
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	t.Run("ReadReferenceCompletedItem", func(t *testing.T) {
		t.Parallel()
		table := createTable(t, c, "id", "")
		sc := byName["replay_completed_from_all_old"]
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: parseItem(t, sc.Options.Existing)}); err != nil {
			t.Fatal(err)
		}
		m := newManager(t, table, "amount")
		got, err := idempotency.Execute(ctx, m, sc.Event, func(context.Context) (goldenResult, error) {
			t.Fatal("callback ran although the reference record is completed")
			return goldenResult{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want goldenResult
		_ = json.Unmarshal(sc.Result, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("replayed %+v, want %+v", got, want)
		}
		_, err = idempotency.Execute(ctx, m, json.RawMessage(`{"id":"ORD-123","amount":43}`), func(context.Context) (goldenResult, error) { return goldenResult{}, nil })
		if !errors.Is(err, idempotency.ErrValidation) {
			t.Fatalf("changed amount: %v", err)
		}
	})

	t.Run("ReferenceInProgressItemRejects", func(t *testing.T) {
		t.Parallel()
		table := createTable(t, c, "id", "")
		sc := byName["in_progress_rejected"]
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: parseItem(t, sc.Options.Existing)}); err != nil {
			t.Fatal(err)
		}
		m := newManager(t, table, "")
		cctx := leaseContext{ctx, now.Add(30 * time.Second)}
		_, err := idempotency.Execute(cctx, m, sc.Event, func(context.Context) (goldenResult, error) {
			t.Fatal("callback ran while the reference execution holds the lease")
			return goldenResult{}, nil
		})
		if !errors.Is(err, idempotency.ErrAlreadyInProgress) {
			t.Fatalf("err = %v, want ErrAlreadyInProgress", err)
		}
	})

	t.Run("WriteEqualsReferenceItem", func(t *testing.T) {
		t.Parallel()
		table := createTable(t, c, "id", "")
		sc := byName["first_call_with_validation"]
		m := newManager(t, table, "amount")
		cctx := leaseContext{ctx, now.Add(time.Duration(sc.Options.RemainingMillis) * time.Millisecond)}
		var event struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(sc.Event, &event)
		if _, err := idempotency.Execute(cctx, m, sc.Event, func(context.Context) (goldenResult, error) {
			return goldenResult{OrderID: event.ID, OK: true, N: []float64{1, 2.5}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		// The reference's final item: the PutItem item with the UpdateItem SET applied.
		var put, update call
		_ = json.Unmarshal(sc.Calls[0], &put)
		_ = json.Unmarshal(sc.Calls[1], &update)
		want := put.Input["Item"].(map[string]any)
		names := update.Input["ExpressionAttributeNames"].(map[string]any)
		values := update.Input["ExpressionAttributeValues"].(map[string]any)
		for placeholder, attr := range names {
			want[attr.(string)] = values[":"+placeholder[1:]]
		}
		key := parseItem(t, mustJSON(t, update.Input["Key"]))
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.Unmarshal(mustJSON(t, itemJSON(out.Item)), &got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("stored item\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, want))
		}
	})
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  idynamodb.Options
		field string
	}{
		{"no table", idynamodb.Options{}, "TableName"},
		{"duplicate", idynamodb.Options{TableName: "t", DataAttr: "status"}, "DataAttr"},
		{"sort equals key", idynamodb.Options{TableName: "t", SortKeyAttr: "id"}, "SortKeyAttr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := idynamodb.New(&recorder{}, tc.opts)
			var oe *idempotency.OptionError
			if !errors.As(err, &oe) || oe.Field != tc.field || !errors.Is(err, idempotency.ErrInvalidOption) {
				t.Fatalf("err = %v, want OptionError for %s", err, tc.field)
			}
		})
	}
}

// leaseContext reports a deadline relative to the golden files' fixed clock without
// ever cancelling, so requests to DynamoDB Local still complete.
type leaseContext struct {
	context.Context
	deadline time.Time
}

func (c leaseContext) Deadline() (time.Time, bool) { return c.deadline, true }
