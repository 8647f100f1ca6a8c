package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairn-go/cairn/checkpoint"
)

// FuzzUnmarshal feeds arbitrary bytes to the decoder: it must never panic, must
// return only *checkpoint.Error, must accept nothing encoding/json rejects, and
// whatever it accepts must re-encode to an envelope it accepts again unchanged.
func FuzzUnmarshal(f *testing.F) {
	c, _ := checkpoint.New(checkpoint.Options{MaxBytes: 1 << 16})
	good, _ := c.Marshal("t", map[string]any{"a": []any{1, "x", nil, true, 1.5e10}})
	for _, s := range [][]byte{good, []byte(`{"v":1}`), []byte(`{"v":1,"type":"t","data":{"a":1,"a":2},"sum":""}`),
		[]byte(`"\ud800"`), []byte("\"\xff\""), []byte(`[[[[]]]]`), []byte(`-0.0e+1`), []byte(`{"\u0000":1}`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		err := c.Unmarshal(b, "", &v)
		if err != nil {
			var ce *checkpoint.Error
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		env, err := c.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.Marshal(env.Type, v)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var w any
		if err := c.Unmarshal(again, env.Type, &w); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		third, _ := c.Marshal(env.Type, w)
		if !bytes.Equal(again, third) {
			t.Fatalf("not stable:\n%s\n%s", again, third)
		}
	})
}
