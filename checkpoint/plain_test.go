package checkpoint_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/checkpoint"
)

// TestPlainValues: MarshalValue writes the JSON value alone, as
// JSON.stringify would (HTML characters unescaped), under the codec's limits,
// and UnmarshalValue applies the strict checks of Unmarshal without the
// envelope's.
func TestPlainValues(t *testing.T) {
	t.Parallel()
	c, err := checkpoint.New(checkpoint.Options{MaxBytes: 64, MaxDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	type order struct {
		ID    string `json:"id"`
		Total int64  `json:"total"`
	}
	b, err := c.MarshalValue("order", order{"<a&b>", 9007199254740993})
	if err != nil || string(b) != `{"id":"<a&b>","total":9007199254740993}` {
		t.Fatalf("MarshalValue: %s %v", b, err)
	}
	var back order
	if err := c.UnmarshalValue(b, "order", &back); err != nil || back.Total != 9007199254740993 {
		t.Fatalf("UnmarshalValue: %+v %v", back, err)
	}
	tests := []struct {
		name string
		in   string
		kind error
	}{
		{"too large", `"` + strings.Repeat("x", 80) + `"`, checkpoint.ErrTooLarge},
		{"too deep", `[[[[1]]]]`, checkpoint.ErrTooDeep},
		{"duplicate", `{"id":"a","id":"b"}`, checkpoint.ErrDuplicateMember},
		{"unknown field", `{"id":"a","price":1}`, checkpoint.ErrUnknownField},
		{"schema", `{"id":1}`, checkpoint.ErrSchema},
		{"syntax", `{"id":`, checkpoint.ErrSyntax},
		{"utf-8", "\"\xff\"", checkpoint.ErrInvalidUTF8},
	}
	for _, tt := range tests {
		var o order
		err := c.UnmarshalValue([]byte(tt.in), "order", &o)
		var ce *checkpoint.Error
		if !errors.Is(err, tt.kind) || !errors.As(err, &ce) || ce.Type != "order" {
			t.Errorf("%s: %v, want %v of type order", tt.name, err, tt.kind)
		}
	}
	if _, err := c.MarshalValue("big", strings.Repeat("x", 80)); !errors.Is(err, checkpoint.ErrTooLarge) {
		t.Errorf("MarshalValue over MaxBytes: %v", err)
	}
	if _, err := c.MarshalValue("bad", "\xff"); !errors.Is(err, checkpoint.ErrInvalidUTF8) {
		t.Errorf("MarshalValue of invalid UTF-8: %v", err)
	}
}

// TestIsEnvelope tells envelopes from plain values.
func TestIsEnvelope(t *testing.T) {
	t.Parallel()
	c, _ := checkpoint.New(checkpoint.Options{})
	env, _ := c.Marshal("t", map[string]int{"a": 1})
	keyed, _ := checkpoint.New(checkpoint.Options{Key: []byte("0123456789abcdef")})
	kenv, _ := keyed.Marshal("t", 1)
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{string(env), true}, {string(kenv), true},
		{`{"a":1}`, false}, {`"x"`, false}, {`null`, false}, {``, false},
		{`{"v":1,"type":"t","data":1,"sum":"md5:x"}`, false},
		{`{"v":1,"type":"t","data":1,"sum":"sha256:x","extra":1}`, false},
		{`{"v":"1","type":"t","data":1,"sum":"sha256:x"}`, false},
	} {
		if got := checkpoint.IsEnvelope([]byte(tt.in)); got != tt.want {
			t.Errorf("IsEnvelope(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzUnmarshalValue: the plain decoder never panics, returns only
// *checkpoint.Error, and accepts nothing encoding/json rejects.
func FuzzUnmarshalValue(f *testing.F) {
	c, _ := checkpoint.New(checkpoint.Options{MaxBytes: 1 << 16})
	for _, s := range []string{`{"a":[1,"x",null,true]}`, `{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[[[[]]]]`, `-0.0e+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		err := c.UnmarshalValue(b, "t", &v)
		if err != nil {
			var ce *checkpoint.Error
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which encoding/json rejects", b)
		}
	})
}
