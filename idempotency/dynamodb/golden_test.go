package dynamodb_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
)

// avJSON renders an AttributeValue in the JSON shape the AWS SDK for JavaScript uses.
func avJSON(av types.AttributeValue) any {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": x.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": x.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": x.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": x.Value}
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range x.Value {
			l = append(l, avJSON(e))
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": itemJSON(x.Value)}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(x.Value)}
	}
	panic("unexpected attribute value")
}

func itemJSON(m map[string]types.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = avJSON(v)
	}
	return out
}

// parseItem decodes an item from the JavaScript JSON shape.
func parseItem(t *testing.T, raw json.RawMessage) map[string]types.AttributeValue {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.AttributeValue{}
	for k, v := range m {
		out[k] = parseAV(t, v)
	}
	return out
}

func parseAV(t *testing.T, raw json.RawMessage) types.AttributeValue {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for typ, v := range m {
		switch typ {
		case "S", "N":
			var s string
			_ = json.Unmarshal(v, &s)
			if typ == "S" {
				return &types.AttributeValueMemberS{Value: s}
			}
			return &types.AttributeValueMemberN{Value: s}
		case "BOOL":
			var b bool
			_ = json.Unmarshal(v, &b)
			return &types.AttributeValueMemberBOOL{Value: b}
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}
		case "L":
			var items []json.RawMessage
			_ = json.Unmarshal(v, &items)
			l := []types.AttributeValue{}
			for _, e := range items {
				l = append(l, parseAV(t, e))
			}
			return &types.AttributeValueMemberL{Value: l}
		case "M":
			return &types.AttributeValueMemberM{Value: parseItem(t, v)}
		}
	}
	t.Fatalf("unsupported attribute value %s", raw)
	return nil
}

type call struct {
	Command string         `json:"command"`
	Input   map[string]any `json:"input"`
}

// recorder is a fake API that records inputs in the JavaScript SDK's JSON shape and
// answers conditional writes with a scripted conflict.
type recorder struct {
	mu       sync.Mutex
	calls    []call
	existing map[string]types.AttributeValue
	allOld   bool
}

func (r *recorder) add(cmd string, in map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{Command: cmd, Input: in})
}

func (r *recorder) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.add("PutItemCommand", map[string]any{
		"TableName": aws.ToString(in.TableName), "Item": itemJSON(in.Item),
		"ExpressionAttributeNames": anyMap(in.ExpressionAttributeNames), "ExpressionAttributeValues": itemJSON(in.ExpressionAttributeValues),
		"ConditionExpression": aws.ToString(in.ConditionExpression), "ReturnValuesOnConditionCheckFailure": string(in.ReturnValuesOnConditionCheckFailure),
	})
	if r.existing != nil {
		e := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		if r.allOld {
			e.Item = r.existing
		}
		return nil, e
	}
	return &dynamodb.PutItemOutput{}, nil
}

func (r *recorder) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.add("GetItemCommand", map[string]any{"TableName": aws.ToString(in.TableName), "Key": itemJSON(in.Key), "ConsistentRead": aws.ToBool(in.ConsistentRead)})
	return &dynamodb.GetItemOutput{Item: r.existing}, nil
}

func (r *recorder) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.add("UpdateItemCommand", map[string]any{
		"TableName": aws.ToString(in.TableName), "Key": itemJSON(in.Key), "UpdateExpression": aws.ToString(in.UpdateExpression),
		"ExpressionAttributeNames": anyMap(in.ExpressionAttributeNames), "ExpressionAttributeValues": itemJSON(in.ExpressionAttributeValues),
	})
	return &dynamodb.UpdateItemOutput{}, nil
}

func (r *recorder) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.add("DeleteItemCommand", map[string]any{"TableName": aws.ToString(in.TableName), "Key": itemJSON(in.Key)})
	return &dynamodb.DeleteItemOutput{}, nil
}

func anyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

type goldenResult struct {
	OrderID string    `json:"order_id"`
	OK      bool      `json:"ok"`
	N       []float64 `json:"n"`
	Nested  struct {
		B *string `json:"b"`
	} `json:"nested"`
}

type scenario struct {
	Name    string          `json:"name"`
	Event   json.RawMessage `json:"event"`
	Options struct {
		EventKeyJMESPath          string          `json:"eventKeyJmesPath"`
		PayloadValidationJMESPath string          `json:"payloadValidationJmesPath"`
		ThrowOnNoKey              bool            `json:"throwOnNoKey"`
		ExpiresAfterSeconds       int             `json:"expiresAfterSeconds"`
		RemainingMillis           int64           `json:"remainingMillis"`
		SortKeyAttr               string          `json:"sortKeyAttr"`
		StaticPKValue             string          `json:"staticPkValue"`
		KeyAttr                   string          `json:"keyAttr"`
		StatusAttr                string          `json:"statusAttr"`
		ExpiryAttr                string          `json:"expiryAttr"`
		InProgressExpiryAttr      string          `json:"inProgressExpiryAttr"`
		DataAttr                  string          `json:"dataAttr"`
		ValidationKeyAttr         string          `json:"validationKeyAttr"`
		Existing                  json.RawMessage `json:"existing"`
		AllOld                    *bool           `json:"allOld"`
	} `json:"options"`
	Calls  []json.RawMessage `json:"calls"`
	Result json.RawMessage   `json:"result"`
	Error  string            `json:"error"`
}

var errNames = map[string]error{
	"IdempotencyValidationError":        idempotency.ErrValidation,
	"IdempotencyAlreadyInProgressError": idempotency.ErrAlreadyInProgress,
}

// TestGoldenDynamoDBRequests runs cairn through the lifecycle scenarios the TypeScript
// library ran and requires the identical DynamoDB requests and outcomes.
func TestGoldenDynamoDBRequests(t *testing.T) {
	t.Parallel()
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
	if len(golden.Scenarios) < 8 {
		t.Fatalf("only %d scenarios", len(golden.Scenarios))
	}
	now := time.UnixMilli(golden.NowMillis)
	for _, sc := range golden.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			o := sc.Options
			rec := &recorder{allOld: o.AllOld == nil || *o.AllOld}
			if o.Existing != nil {
				rec.existing = parseItem(t, o.Existing)
			}
			store, err := idynamodb.New(rec, idynamodb.Options{
				TableName: "idempotency", KeyAttr: o.KeyAttr, SortKeyAttr: o.SortKeyAttr, StaticPKValue: o.StaticPKValue,
				StatusAttr: o.StatusAttr, ExpiryAttr: o.ExpiryAttr, InProgressExpiryAttr: o.InProgressExpiryAttr,
				DataAttr: o.DataAttr, ValidationAttr: o.ValidationKeyAttr,
			})
			if err != nil {
				t.Fatal(err)
			}
			opts := idempotency.Options{
				KeyPrefix: "process-order", EventKeyJMESPath: o.EventKeyJMESPath, PayloadValidationJMESPath: o.PayloadValidationJMESPath,
				ThrowOnNoKey: o.ThrowOnNoKey, Clock: func() time.Time { return now },
				LookupEnv: func(string) (string, bool) { return "", false },
			}
			if o.ExpiresAfterSeconds != 0 {
				d := time.Duration(o.ExpiresAfterSeconds) * time.Second
				opts.ExpiresAfter = &d
			}
			m, err := idempotency.New(store, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if o.RemainingMillis != 0 {
				ctx = leaseContext{ctx, now.Add(time.Duration(o.RemainingMillis) * time.Millisecond)}
			}
			boom := errors.New("boom")
			var event struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(sc.Event, &event)
			got, err := idempotency.Execute(ctx, m, sc.Event, func(context.Context) (goldenResult, error) {
				if sc.Name == "business_error_deletes" {
					return goldenResult{}, boom
				}
				r := goldenResult{OrderID: event.ID, OK: true, N: []float64{1, 2.5}}
				return r, nil
			})
			switch sc.Error {
			case "":
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				var want goldenResult
				if err := json.Unmarshal(sc.Result, &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("result %+v, want %+v", got, want)
				}
			case "Error":
				if !errors.Is(err, boom) {
					t.Fatalf("err = %v, want the business error", err)
				}
			default:
				if !errors.Is(err, errNames[sc.Error]) {
					t.Fatalf("err = %v, want %s", err, sc.Error)
				}
			}
			var want []call
			for _, c := range sc.Calls {
				var x call
				if err := json.Unmarshal(c, &x); err != nil {
					t.Fatal(err)
				}
				want = append(want, x)
			}
			gotJSON, _ := json.Marshal(rec.calls)
			var gotCalls []call
			_ = json.Unmarshal(gotJSON, &gotCalls)
			if !reflect.DeepEqual(gotCalls, want) {
				wantJSON, _ := json.MarshalIndent(want, "", " ")
				gotJSON, _ := json.MarshalIndent(gotCalls, "", " ")
				t.Fatalf("requests differ\n got %s\nwant %s", gotJSON, wantJSON)
			}
		})
	}
}
