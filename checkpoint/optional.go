package checkpoint

import (
	"bytes"
	"encoding/json"
)

// Optional holds a value that may be absent, null or set, three states a plain
// pointer field collapses into two. Tag the field `json:",omitzero"` so an absent
// Optional is omitted when encoding.
type Optional[T any] struct {
	// Present: the member appeared (as null or a value).
	Present bool
	// Null: the member was null.
	Null  bool
	Value T
}

// Some returns a set Optional; Null returns a present null.
func Some[T any](v T) Optional[T] { return Optional[T]{Present: true, Value: v} }

// NullOf returns an Optional that encodes as JSON null.
func NullOf[T any]() Optional[T] { return Optional[T]{Present: true, Null: true} }

// IsZero reports absence, for omitzero.
func (o Optional[T]) IsZero() bool { return !o.Present }

// MarshalJSON encodes null or the value (an absent Optional without omitzero encodes as null).
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Present || o.Null {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// UnmarshalJSON records presence; encoding/json calls it only for members that appear.
func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	*o = Optional[T]{Present: true}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Null = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(&o.Value)
}
