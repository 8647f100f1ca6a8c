package durable

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/cairn-go/cairn/checkpoint"
)

// Serdes turns the values of durable operations into checkpoint payloads and
// back. The default, [JSONSerdes], writes plain JSON as AWS's official SDKs
// do, so an execution can move between them; [EnvelopeSerdes] writes cairn's
// versioned, integrity-checked checkpoint envelopes. Set one for a handler in
// Options.Serdes, or for one operation in StepOptions, ChildOptions,
// BatchOptions, CallbackOptions, ConditionOptions or InvokeOptions.
// Implementations must be safe for
// concurrent use: Parallel and Map branches run in goroutines.
type Serdes interface {
	// Serialize returns the payload of v, or nil to record none (as the
	// official SDKs do for undefined).
	Serialize(sc SerdesContext, v any) (*string, error)
	// Deserialize decodes data (nil: no payload was recorded) into target, a
	// non-nil pointer. With no payload target keeps its zero value.
	Deserialize(sc SerdesContext, data *string, target any) error
}

// SerdesContext says which operation a payload belongs to.
type SerdesContext struct {
	ExecutionArn string
	// OperationID and Name identify the operation.
	OperationID, Name string
	// Kind is what the payload holds: KindStep, KindContext, KindCondition,
	// KindBatch, KindCallback, KindInvokeInput or KindInvokeResult.
	// [EnvelopeSerdes] records it as the type.
	Kind string
}

// Payload kinds of [SerdesContext]. The step, context and condition kinds are
// the envelope type names earlier releases wrote.
const (
	KindStep      = "durable.step"
	KindContext   = "durable.context"
	KindCondition = "durable.condition"
	KindBatch     = "durable.batch"
	KindCallback  = "durable.callback"
	// KindInvokeInput and KindInvokeResult are a chained invoke's input and
	// the invoked function's result, under InvokeOptions' serdes.
	KindInvokeInput  = "durable.invoke.input"
	KindInvokeResult = "durable.invoke.result"
)

// none reports whether v is a value the official SDKs would checkpoint
// without a payload (undefined): a nil interface or a value of a type of zero
// size such as struct{}.
func none(v any) bool {
	if v == nil {
		return true
	}
	t := reflect.TypeOf(v)
	return t.Kind() == reflect.Struct && t.Size() == 0
}

// JSONSerdes is the default [Serdes]: plain JSON, exactly as AWS's SDKs write
// it (a struct{} or nil result records no payload), under the size and depth
// limits and strict decoding of its checkpoint.Codec, whose typed
// *checkpoint.Error it returns. It also reads checkpoint envelopes, so an
// execution begun under [EnvelopeSerdes] (the default of earlier releases)
// goes on after an upgrade.
type JSONSerdes struct{ codec *checkpoint.Codec }

// NewJSONSerdes returns a JSONSerdes with opts' limits (MaxBytes, MaxDepth,
// AllowUnknownFields; Key verifies envelopes read from earlier executions).
func NewJSONSerdes(opts checkpoint.Options) (*JSONSerdes, error) {
	c, err := checkpoint.New(opts)
	if err != nil {
		return nil, err
	}
	return &JSONSerdes{codec: c}, nil
}

// Serialize encodes v as plain JSON, or returns nil for a value with nothing to record.
func (s *JSONSerdes) Serialize(sc SerdesContext, v any) (*string, error) {
	if none(v) {
		return nil, nil
	}
	b, err := s.codec.MarshalValue(sc.Kind, v)
	if err != nil {
		return nil, err
	}
	str := string(b)
	return &str, nil
}

// Deserialize decodes a plain JSON value, or an envelope an earlier release wrote.
func (s *JSONSerdes) Deserialize(sc SerdesContext, data *string, target any) error {
	return decodeEither(s.codec, sc, data, target)
}

func (s *JSONSerdes) envelopeCodec() *checkpoint.Codec { return s.codec }

// EnvelopeSerdes writes every payload as a checkpoint envelope
// ({"v":1,"type":...,"data":...,"sum":...}) whose type is the payload's
// Kind: versioned and integrity-checked (an HMAC with checkpoint.Options.Key),
// but readable only by cairn. It reads plain JSON values too.
type EnvelopeSerdes struct{ codec *checkpoint.Codec }

// NewEnvelopeSerdes returns an EnvelopeSerdes over codec; nil: checkpoint's defaults.
func NewEnvelopeSerdes(codec *checkpoint.Codec) (*EnvelopeSerdes, error) {
	if codec == nil {
		c, err := checkpoint.New(checkpoint.Options{})
		if err != nil {
			return nil, err
		}
		codec = c
	}
	return &EnvelopeSerdes{codec: codec}, nil
}

// Serialize wraps v in an envelope of type sc.Kind.
func (s *EnvelopeSerdes) Serialize(sc SerdesContext, v any) (*string, error) {
	b, err := s.codec.Marshal(sc.Kind, v)
	if err != nil {
		return nil, err
	}
	str := string(b)
	return &str, nil
}

// Deserialize opens an envelope (any type) or decodes a plain JSON value.
func (s *EnvelopeSerdes) Deserialize(sc SerdesContext, data *string, target any) error {
	return decodeEither(s.codec, sc, data, target)
}

func (s *EnvelopeSerdes) envelopeCodec() *checkpoint.Codec { return s.codec }

// decodeEither decodes an envelope or a plain JSON value into target.
func decodeEither(c *checkpoint.Codec, sc SerdesContext, data *string, target any) error {
	if data == nil || *data == "" {
		return nil
	}
	b := []byte(*data)
	if checkpoint.IsEnvelope(b) {
		return c.Unmarshal(b, "", target)
	}
	return c.UnmarshalValue(b, sc.Kind, target)
}

// envelopeReader is a Serdes that can open the envelopes of earlier releases
// without binding their data; WaitForCallback uses it to read the result of a
// callback context written under the envelope.
type envelopeReader interface{ envelopeCodec() *checkpoint.Codec }

// openLegacy returns the data of data when it is an envelope.
func openLegacy(s Serdes, data *string) (json.RawMessage, bool, error) {
	if data == nil || !checkpoint.IsEnvelope([]byte(*data)) {
		return nil, false, nil
	}
	var c *checkpoint.Codec
	if er, ok := s.(envelopeReader); ok {
		c = er.envelopeCodec()
	} else {
		var err error
		if c, err = checkpoint.New(checkpoint.Options{}); err != nil {
			return nil, false, err
		}
	}
	env, err := c.Open([]byte(*data))
	if err != nil {
		return nil, true, err
	}
	return env.Data, true, nil
}

// serialize runs s for the operation id of dc's execution.
func (dc *Context) serialize(s Serdes, kind, id, name string, v any) (*string, error) {
	p, err := s.Serialize(SerdesContext{ExecutionArn: dc.x.arn, OperationID: id, Name: name, Kind: kind}, v)
	if err != nil {
		return nil, &SerdesError{OperationID: id, Name: name, Op: "serialize", Err: err}
	}
	return p, nil
}

func (dc *Context) deserialize(s Serdes, kind, id, name string, data *string, target any) error {
	if err := s.Deserialize(SerdesContext{ExecutionArn: dc.x.arn, OperationID: id, Name: name, Kind: kind}, data, target); err != nil {
		return &SerdesError{OperationID: id, Name: name, Op: "deserialize", Err: err}
	}
	return nil
}

// SerdesError is a failure of a [Serdes] for one operation. It is permanent:
// the same value or payload fails the same way on every attempt. It unwraps
// to the Serdes' own error (a *checkpoint.Error for the built-in ones).
type SerdesError struct {
	OperationID, Name string
	// Op is "serialize" or "deserialize".
	Op  string
	Err error
}

func (e *SerdesError) Error() string {
	return fmt.Sprintf("durable: %s of operation %s (%s): %v", e.Op, e.OperationID, e.Name, e.Err)
}

// Unwrap returns the Serdes' error.
func (e *SerdesError) Unwrap() error { return e.Err }

// Permanent reports that retrying cannot help.
func (e *SerdesError) Permanent() bool { return true }

// ErrorType names the failure in checkpointed error objects.
func (e *SerdesError) ErrorType() string { return "SerdesError" }

// roundTrip returns v as a replay will: decoded from its payload, so the
// live run and every replay see the same value (numbers in an any as
// json.Number, a custom Serdes' transformation applied), as the official
// SDKs hand back deserialize(serialize(result)). A value that does not
// decode from its own payload fails now, before it is checkpointed.
func roundTrip[T any](dc *Context, s Serdes, kind, id, name string, payload *string, v T) (T, error) {
	if payload == nil {
		return v, nil
	}
	var out T
	if err := dc.deserialize(s, kind, id, name, payload, &out); err != nil {
		return v, err
	}
	return out, nil
}
