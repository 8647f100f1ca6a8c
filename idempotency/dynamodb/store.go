package dynamodb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/internal/jsvalue"
)

// API is the part of the DynamoDB client the store uses; *dynamodb.Client satisfies it.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Options configure a Store. Attribute names default to the reference's.
type Options struct {
	TableName string
	// KeyAttr is the partition key attribute; default "id".
	KeyAttr string
	// SortKeyAttr, when set, selects the composite layout: the partition key holds
	// StaticPKValue and this attribute holds the idempotency key.
	SortKeyAttr string
	// StaticPKValue defaults to "idempotency#" + the trimmed AWS_LAMBDA_FUNCTION_NAME.
	StaticPKValue        string
	StatusAttr           string // default "status"
	ExpiryAttr           string // default "expiration"
	InProgressExpiryAttr string // default "in_progress_expiration"
	DataAttr             string // default "data"
	ValidationAttr       string // default "validation"
	// LookupEnv reads environment variables; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Store is an idempotency.Store backed by DynamoDB.
type Store struct {
	api   API
	table string
	key, sortKey, staticPK,
	status, expiry, inProgress, data, validation string
}

var _ idempotency.Store = (*Store)(nil)

// New validates opts and returns a Store. It sends no request.
func New(api API, opts Options) (*Store, error) {
	if api == nil {
		return nil, &idempotency.OptionError{Field: "api", Value: nil, Reason: "a DynamoDB client is required"}
	}
	if strings.TrimSpace(opts.TableName) == "" {
		return nil, &idempotency.OptionError{Field: "TableName", Value: opts.TableName, Reason: "required"}
	}
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	s := &Store{
		api:        api,
		table:      opts.TableName,
		key:        def(opts.KeyAttr, "id"),
		sortKey:    opts.SortKeyAttr,
		status:     def(opts.StatusAttr, "status"),
		expiry:     def(opts.ExpiryAttr, "expiration"),
		inProgress: def(opts.InProgressExpiryAttr, "in_progress_expiration"),
		data:       def(opts.DataAttr, "data"),
		validation: def(opts.ValidationAttr, "validation"),
		staticPK:   opts.StaticPKValue,
	}
	if s.sortKey != "" && s.staticPK == "" {
		lookup := opts.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		fn, _ := lookup("AWS_LAMBDA_FUNCTION_NAME")
		s.staticPK = "idempotency#" + strings.TrimSpace(fn)
	}
	seen := map[string]string{}
	for _, f := range []struct{ field, name string }{
		{"KeyAttr", s.key}, {"SortKeyAttr", s.sortKey}, {"StatusAttr", s.status}, {"ExpiryAttr", s.expiry},
		{"InProgressExpiryAttr", s.inProgress}, {"DataAttr", s.data}, {"ValidationAttr", s.validation},
	} {
		if f.name == "" {
			continue
		}
		if other, dup := seen[f.name]; dup {
			return nil, &idempotency.OptionError{Field: f.field, Value: f.name, Reason: "same attribute name as " + other}
		}
		seen[f.name] = f.field
	}
	return s, nil
}

func (s *Store) itemKey(key string) map[string]types.AttributeValue {
	if s.sortKey != "" {
		return map[string]types.AttributeValue{
			s.key:     &types.AttributeValueMemberS{Value: s.staticPK},
			s.sortKey: &types.AttributeValueMemberS{Value: key},
		}
	}
	return map[string]types.AttributeValue{s.key: &types.AttributeValueMemberS{Value: key}}
}

func numAV(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// PutInProgress writes the record unless a live one exists, with the reference's
// condition and ReturnValuesOnConditionCheckFailure=ALL_OLD.
func (s *Store) PutInProgress(ctx context.Context, rec idempotency.Record, now time.Time) error {
	item := s.itemKey(rec.Key)
	item[s.expiry] = numAV(rec.ExpiresAt)
	item[s.status] = &types.AttributeValueMemberS{Value: string(rec.Status)}
	if rec.InProgressExpiresAt != 0 {
		item[s.inProgress] = numAV(rec.InProgressExpiresAt)
	}
	if rec.ValidationHash != "" {
		item[s.validation] = &types.AttributeValueMemberS{Value: rec.ValidationHash}
	}
	nowMs := now.UnixMilli()
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item:      item,
		ExpressionAttributeNames: map[string]string{
			"#id":                 s.key,
			"#expiry":             s.expiry,
			"#in_progress_expiry": s.inProgress,
			"#status":             s.status,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":           &types.AttributeValueMemberN{Value: jsvalue.FormatNumber(float64(nowMs) / 1000)},
			":now_in_millis": numAV(nowMs),
			":inprogress":    &types.AttributeValueMemberS{Value: string(idempotency.StatusInProgress)},
		},
		ConditionExpression:                 aws.String(ConditionExpression),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return err
	}
	conflict := &idempotency.ItemAlreadyExistsError{Key: rec.Key}
	if len(ccf.Item) > 0 {
		existing, perr := s.record(ccf.Item)
		if perr != nil {
			return perr
		}
		conflict.Existing = &existing
	}
	return conflict
}

// ConditionExpression is the reference's acquisition condition: the key is absent,
// the record expired, or an in-progress lease ended.
const ConditionExpression = "attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"

// Get reads a record with a strongly consistent read.
func (s *Store) Get(ctx context.Context, key string) (idempotency.Record, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.itemKey(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return idempotency.Record{}, err
	}
	if len(out.Item) == 0 {
		return idempotency.Record{}, idempotency.ErrItemNotFound
	}
	return s.record(out.Item)
}

// Complete sets status, expiry, response and validation hash with the reference's
// unconditional UpdateItem.
func (s *Store) Complete(ctx context.Context, rec idempotency.Record, _ time.Time) error {
	fields := []string{"#expiry = :expiry", "#status = :status"}
	names := map[string]string{"#expiry": s.expiry, "#status": s.status}
	values := map[string]types.AttributeValue{
		":expiry": numAV(rec.ExpiresAt),
		":status": &types.AttributeValueMemberS{Value: string(rec.Status)},
	}
	if rec.Data != nil {
		av, err := jsonToAV(rec.Data)
		if err != nil {
			return err
		}
		fields = append(fields, "#response_data = :response_data")
		names["#response_data"] = s.data
		values[":response_data"] = av
	}
	if rec.ValidationHash != "" {
		fields = append(fields, "#validation_key = :validation_key")
		names["#validation_key"] = s.validation
		values[":validation_key"] = &types.AttributeValueMemberS{Value: rec.ValidationHash}
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.itemKey(rec.Key),
		UpdateExpression:          aws.String("SET " + strings.Join(fields, ", ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	return err
}

// Delete removes the record.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: s.itemKey(key)})
	return err
}

// record decodes an item written by cairn or by the TypeScript library.
func (s *Store) record(item map[string]types.AttributeValue) (idempotency.Record, error) {
	var rec idempotency.Record
	keyAttr := s.key
	if s.sortKey != "" {
		keyAttr = s.sortKey
	}
	if v, ok := item[keyAttr].(*types.AttributeValueMemberS); ok {
		rec.Key = v.Value
	}
	if v, ok := item[s.status].(*types.AttributeValueMemberS); ok {
		rec.Status = idempotency.Status(v.Value)
	}
	var err error
	if rec.ExpiresAt, err = intAttr(item, s.expiry); err != nil {
		return rec, err
	}
	if rec.InProgressExpiresAt, err = intAttr(item, s.inProgress); err != nil {
		return rec, err
	}
	if v, ok := item[s.validation].(*types.AttributeValueMemberS); ok {
		rec.ValidationHash = v.Value
	}
	if av, ok := item[s.data]; ok {
		b, err := avToJSON(nil, av)
		if err != nil {
			return rec, fmt.Errorf("idempotency/dynamodb: attribute %s: %w", s.data, err)
		}
		rec.Data = b
	}
	return rec, nil
}

func intAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	av, ok := item[name]
	if !ok {
		return 0, nil
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("idempotency/dynamodb: attribute %s is %T, want a number", name, av)
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		return 0, fmt.Errorf("idempotency/dynamodb: attribute %s: %w", name, err)
	}
	return int64(f), nil
}

// jsonToAV converts a JSON document to native AttributeValues the way the reference's
// marshall does for the equivalent JavaScript value; number tokens are kept verbatim.
func jsonToAV(data []byte) (types.AttributeValue, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &idempotency.UnsupportedValueError{Reason: "response is not valid JSON", Err: err}
	}
	return anyToAV(v), nil
}

func anyToAV(v any) types.AttributeValue {
	switch x := v.(type) {
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}
	case json.Number:
		return &types.AttributeValueMemberN{Value: x.String()}
	case string:
		return &types.AttributeValueMemberS{Value: x}
	case []any:
		l := make([]types.AttributeValue, len(x))
		for i, e := range x {
			l[i] = anyToAV(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	default:
		m := x.(map[string]any)
		out := make(map[string]types.AttributeValue, len(m))
		for k, e := range m {
			out[k] = anyToAV(e)
		}
		return &types.AttributeValueMemberM{Value: out}
	}
}

// avToJSON appends the JSON form of av. Maps are written with sorted keys (DynamoDB
// keeps no order); binary values become base64 strings and sets become arrays.
func avToJSON(b []byte, av types.AttributeValue) ([]byte, error) {
	switch x := av.(type) {
	case *types.AttributeValueMemberNULL:
		return append(b, "null"...), nil
	case *types.AttributeValueMemberBOOL:
		return strconv.AppendBool(b, x.Value), nil
	case *types.AttributeValueMemberN:
		if !json.Valid([]byte(x.Value)) {
			return nil, fmt.Errorf("invalid number %q", x.Value)
		}
		return append(b, x.Value...), nil
	case *types.AttributeValueMemberS:
		return jsvalue.AppendQuoted(b, x.Value), nil
	case *types.AttributeValueMemberB:
		return jsvalue.AppendQuoted(b, base64.StdEncoding.EncodeToString(x.Value)), nil
	case *types.AttributeValueMemberL:
		b = append(b, '[')
		for i, e := range x.Value {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = avToJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(x.Value))
		for k := range x.Value {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsvalue.AppendQuoted(b, k)
			b = append(b, ':')
			var err error
			if b, err = avToJSON(b, x.Value[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case *types.AttributeValueMemberSS:
		l := make([]types.AttributeValue, len(x.Value))
		for i, s := range x.Value {
			l[i] = &types.AttributeValueMemberS{Value: s}
		}
		return avToJSON(b, &types.AttributeValueMemberL{Value: l})
	case *types.AttributeValueMemberNS:
		l := make([]types.AttributeValue, len(x.Value))
		for i, s := range x.Value {
			l[i] = &types.AttributeValueMemberN{Value: s}
		}
		return avToJSON(b, &types.AttributeValueMemberL{Value: l})
	case *types.AttributeValueMemberBS:
		l := make([]types.AttributeValue, len(x.Value))
		for i, s := range x.Value {
			l[i] = &types.AttributeValueMemberB{Value: s}
		}
		return avToJSON(b, &types.AttributeValueMemberL{Value: l})
	}
	return nil, fmt.Errorf("unsupported attribute value %T", av)
}
