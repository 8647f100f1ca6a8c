package checkpoint

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Version is the serializer version this release writes. Every version listed in
// [ReadableVersions] stays readable, so values of runs in flight survive an upgrade.
const Version = 1

// ReadableVersions lists the serializer versions [Codec.Unmarshal] accepts.
var ReadableVersions = []int{1}

// Defaults for [Options].
const (
	// DefaultMaxBytes matches the 256 KiB payload limit of a Lambda durable
	// execution operation, so a value that fits here fits there.
	DefaultMaxBytes = 256 * 1024
	DefaultMaxDepth = 100
	// MaxTypeLength bounds the type name.
	MaxTypeLength = 256
)

// Options configure a [Codec]. The zero value is valid.
type Options struct {
	// MaxBytes bounds a whole encoded envelope; 0 means DefaultMaxBytes.
	MaxBytes int
	// MaxDepth bounds array/object nesting inside the envelope; 0 means DefaultMaxDepth.
	MaxDepth int
	// AllowUnknownFields accepts data members the target struct does not declare
	// and drops them. The default rejects them with ErrUnknownField, because a
	// member nobody reads is usually a field that was renamed.
	AllowUnknownFields bool
	// Key, when set, makes the integrity sum an HMAC-SHA256 under this key, so
	// whoever can write the store but does not hold the key cannot forge a value.
	// Without a key the sum is a plain SHA-256 that detects corruption and edits
	// that forget to update it, not a deliberate forgery.
	Key []byte
}

// Codec encodes and decodes checkpoint envelopes. It is safe for concurrent use.
type Codec struct {
	maxBytes, maxDepth int
	allowUnknown       bool
	key                []byte
}

// ArgumentError reports an invalid option.
type ArgumentError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("checkpoint: invalid %s %v: %s", e.Field, e.Value, e.Reason)
}

// New returns a Codec, or an *[ArgumentError] naming a bad option.
func New(opts Options) (*Codec, error) {
	c := &Codec{maxBytes: opts.MaxBytes, maxDepth: opts.MaxDepth, allowUnknown: opts.AllowUnknownFields}
	switch {
	case opts.MaxBytes < 0:
		return nil, &ArgumentError{Field: "Options.MaxBytes", Value: opts.MaxBytes, Reason: "must not be negative"}
	case opts.MaxBytes == 0:
		c.maxBytes = DefaultMaxBytes
	}
	switch {
	case opts.MaxDepth < 0:
		return nil, &ArgumentError{Field: "Options.MaxDepth", Value: opts.MaxDepth, Reason: "must not be negative"}
	case opts.MaxDepth == 0:
		c.maxDepth = DefaultMaxDepth
	}
	if opts.Key != nil && len(opts.Key) < 16 {
		return nil, &ArgumentError{Field: "Options.Key", Value: fmt.Sprintf("%d bytes", len(opts.Key)), Reason: "use at least 16 bytes"}
	}
	c.key = bytes.Clone(opts.Key)
	return c, nil
}

// envelope is the wire form. Member order is fixed by the struct.
type envelope struct {
	V    json.Number     `json:"v"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	Sum  string          `json:"sum"`
}

// Envelope is a decoded envelope whose data has not been bound to a Go type.
type Envelope struct {
	Version int
	Type    string
	Data    json.RawMessage
}

// Marshal encodes v as a checkpoint of the named type. It fails with an *[Error] of
// kind ErrMarshal (a MarshalJSON error, an unsupported value), ErrInvalidUTF8 (a Go
// string that is not valid UTF-8, which encoding/json would silently replace with
// U+FFFD), ErrDuplicateMember (a custom marshaler emitting a member twice) or
// ErrTooLarge (the envelope would exceed MaxBytes, with the size it would have).
func (c *Codec) Marshal(typ string, v any) ([]byte, error) {
	if err := checkType(typ); err != nil {
		return nil, &Error{Op: OpEncode, Kind: ErrMarshal, Field: "type", Type: typ, Err: err}
	}
	data, err := encodeValue(typ, v)
	if err != nil {
		return nil, err
	}
	if e := scan(data, c.maxDepth-1); e != nil {
		e.Op, e.Type = OpEncode, typ
		return nil, e
	}
	// Encoded again without HTML escaping: json.Marshal would rewrite the raw data
	// and break the sum computed over it.
	out, err := encode(envelope{V: json.Number("1"), Type: typ, Data: data, Sum: c.sum(typ, data)})
	if err != nil {
		return nil, &Error{Op: OpEncode, Kind: ErrMarshal, Type: typ, Err: err}
	}
	if len(out) > c.maxBytes {
		return nil, &Error{Op: OpEncode, Kind: ErrTooLarge, Type: typ, Size: len(out), Limit: c.maxBytes}
	}
	return out, nil
}

// Open checks an envelope (size, strict JSON, version, integrity) and returns it
// without binding its data to a Go type, for tools that display checkpoints.
func (c *Codec) Open(b []byte) (Envelope, error) {
	if len(b) > c.maxBytes {
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrTooLarge, Size: len(b), Limit: c.maxBytes}
	}
	if e := scan(b, c.maxDepth); e != nil {
		return Envelope{}, e
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var raw struct {
		V    *json.Number    `json:"v"`
		Type *string         `json:"type"`
		Data json.RawMessage `json:"data"`
		Sum  *string         `json:"sum"`
	}
	if err := dec.Decode(&raw); err != nil {
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrEnvelope, Err: err}
	}
	// encoding/json matches member names case-insensitively; the envelope's are exact.
	var members map[string]json.RawMessage
	_ = json.Unmarshal(b, &members)
	for name := range members {
		if name != "v" && name != "type" && name != "data" && name != "sum" {
			return Envelope{}, &Error{Op: OpDecode, Kind: ErrEnvelope, Field: name, Err: simpleError("unexpected envelope member")}
		}
	}
	switch {
	case raw.V == nil:
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrEnvelope, Field: "v", Err: simpleError("missing")}
	case raw.Type == nil:
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrEnvelope, Field: "type", Err: simpleError("missing")}
	case raw.Data == nil:
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrEnvelope, Field: "data", Type: *raw.Type, Err: simpleError("missing")}
	case raw.Sum == nil:
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrEnvelope, Field: "sum", Type: *raw.Type, Err: simpleError("missing")}
	}
	if string(*raw.V) != "1" {
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrUnsupportedVersion, Field: "v", Type: *raw.Type,
			Err: fmt.Errorf("version %s; this release reads %v", *raw.V, ReadableVersions)}
	}
	if want := c.sum(*raw.Type, raw.Data); !hmac.Equal([]byte(want), []byte(*raw.Sum)) {
		reason := "sum does not match type and data"
		if strings.HasPrefix(*raw.Sum, "sha256:") != strings.HasPrefix(want, "sha256:") {
			reason = "sum algorithm differs from the codec's (keyed vs unkeyed)"
		}
		return Envelope{}, &Error{Op: OpDecode, Kind: ErrTampered, Field: "sum", Type: *raw.Type, Err: simpleError(reason)}
	}
	return Envelope{Version: 1, Type: *raw.Type, Data: raw.Data}, nil
}

// Unmarshal decodes a checkpoint written by [Codec.Marshal] into v, a non-nil
// pointer, checking that its type is typ (any type when typ is empty). Outcomes,
// each an *[Error] with the kind named:
//
//   - larger than MaxBytes: ErrTooLarge, before parsing, with the size;
//   - not one JSON value, trailing data: ErrSyntax with the byte offset;
//   - invalid UTF-8 or an unpaired \uD800-style escape: ErrInvalidUTF8;
//   - an object member named twice, anywhere: ErrDuplicateMember with its path;
//   - "v" other than a readable version: ErrUnsupportedVersion;
//   - a different "type": ErrTypeMismatch; a sum that does not match: ErrTampered;
//   - a member the struct does not declare (field removed or renamed), or one that
//     matches a field only case-insensitively: ErrUnknownField with its path
//     (unless AllowUnknownFields, which drops the truly unknown ones);
//   - a member of the wrong JSON kind (field type changed), or an UnmarshalJSON
//     error: ErrSchema wrapping the cause.
//
// A struct field added since the value was written keeps its zero value. Numbers
// decoded into interface values are json.Number, so int64 extremes, 2^53+1 and
// long decimals keep their exact text; a float64 target rounds as JSON allows.
// JSON null leaves a field at its zero value and absent leaves it untouched; use
// [Optional] to tell them apart.
func (c *Codec) Unmarshal(b []byte, typ string, v any) error {
	env, err := c.Open(b)
	if err != nil {
		return err
	}
	if typ != "" && env.Type != typ {
		return &Error{Op: OpDecode, Kind: ErrTypeMismatch, Field: "type", Type: env.Type, Err: fmt.Errorf("want %q", typ)}
	}
	return c.bind(env.Data, env.Type, v)
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func (c *Codec) sum(typ string, data []byte) string {
	var compact bytes.Buffer
	if json.Compact(&compact, data) != nil {
		compact.Reset()
		compact.Write(data)
	}
	msg := append(append(append([]byte("cairn.checkpoint/1\x00"), typ...), 0), compact.Bytes()...)
	if c.key != nil {
		m := hmac.New(sha256.New, c.key)
		m.Write(msg)
		return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
	}
	s := sha256.Sum256(msg)
	return "sha256:" + hex.EncodeToString(s[:])
}

func checkType(typ string) error {
	switch {
	case typ == "":
		return simpleError("type name is required")
	case len(typ) > MaxTypeLength:
		return fmt.Errorf("type name longer than %d bytes", MaxTypeLength)
	case !utf8.ValidString(typ):
		return simpleError("type name is not valid UTF-8")
	}
	return nil
}

// encodeValue encodes v for a checkpoint of type typ (which only labels the
// error), refusing strings that are not valid UTF-8, which encoding/json would
// silently replace with U+FFFD.
func encodeValue(typ string, v any) ([]byte, error) {
	if path, bad := invalidString(reflect.ValueOf(v), "", 0); bad {
		return nil, &Error{Op: OpEncode, Kind: ErrInvalidUTF8, Type: typ, Field: path, Err: simpleError("string is not valid UTF-8")}
	}
	data, err := encode(v)
	if err != nil {
		return nil, &Error{Op: OpEncode, Kind: ErrMarshal, Type: typ, Err: err}
	}
	return data, nil
}

// encode is JSON as JSON.stringify writes it: HTML characters left unescaped
// and no trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
