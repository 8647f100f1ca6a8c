package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// MarshalValue encodes v as a plain JSON value, without the envelope: the
// form AWS's durable-execution SDKs checkpoint by default. The checks of
// [Codec.Marshal] apply (valid UTF-8, no duplicate member from a custom
// marshaler, MaxBytes and MaxDepth, HTML characters left unescaped as
// JSON.stringify leaves them), and failures are the same *[Error] kinds with
// the type name typ, which only labels the error.
func (c *Codec) MarshalValue(typ string, v any) ([]byte, error) {
	data, err := encodeValue(typ, v)
	if err != nil {
		return nil, err
	}
	if len(data) > c.maxBytes {
		return nil, &Error{Op: OpEncode, Kind: ErrTooLarge, Type: typ, Size: len(data), Limit: c.maxBytes}
	}
	if e := scan(data, c.maxDepth); e != nil {
		e.Op, e.Type = OpEncode, typ
		return nil, e
	}
	return data, nil
}

// UnmarshalValue decodes the plain JSON value b into v, a non-nil pointer,
// with the checks and error kinds of [Codec.Unmarshal] other than those of
// the envelope (version, type, sum): size before parsing, strict syntax and
// UTF-8, duplicate members, depth, unknown members (unless
// AllowUnknownFields) and schema. typ only labels the error.
func (c *Codec) UnmarshalValue(b []byte, typ string, v any) error {
	if len(b) > c.maxBytes {
		return &Error{Op: OpDecode, Kind: ErrTooLarge, Type: typ, Size: len(b), Limit: c.maxBytes}
	}
	if e := scan(b, c.maxDepth); e != nil {
		e.Type = typ
		return e
	}
	return c.bind(b, typ, v)
}

// bind decodes checked JSON data into v.
func (c *Codec) bind(data []byte, typ string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &Error{Op: OpDecode, Kind: ErrSchema, Type: typ, Err: fmt.Errorf("target must be a non-nil pointer, got %T", v)}
	}
	var tree any
	if err := decodeNumbers(data, &tree); err != nil {
		return &Error{Op: OpDecode, Kind: ErrSyntax, Type: typ, Err: err}
	}
	if path, reason, bad := checkMembers(tree, rv.Type().Elem(), "", c.allowUnknown); bad {
		return &Error{Op: OpDecode, Kind: ErrUnknownField, Type: typ, Field: path, Err: simpleError(reason)}
	}
	if err := decodeNumbers(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Op: OpDecode, Kind: ErrSchema, Type: typ, Field: te.Field, Err: err}
		}
		return &Error{Op: OpDecode, Kind: ErrSchema, Type: typ, Err: err}
	}
	return nil
}

// IsEnvelope reports whether b has the shape of a checkpoint envelope: one
// JSON object whose members are exactly "v" (a number), "type", "data" and
// "sum" (a string beginning with a sum algorithm this package writes). Readers
// that accept both plain JSON values and envelopes, such as a durable
// execution upgraded while in flight, use it to tell them apart; the sum is
// verified only by [Codec.Unmarshal] or [Codec.Open].
func IsEnvelope(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) != nil || len(members) != 4 {
		return false
	}
	for _, k := range []string{"v", "type", "data", "sum"} {
		if _, ok := members[k]; !ok {
			return false
		}
	}
	var v float64 // a number, not a string: json.Number would take "1" too
	var sum string
	if json.Unmarshal(members["v"], &v) != nil || json.Unmarshal(members["sum"], &sum) != nil {
		return false
	}
	return bytes.HasPrefix([]byte(sum), []byte("sha256:")) || bytes.HasPrefix([]byte(sum), []byte("hmac-sha256:"))
}
