package worlds_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// Each limit accepts its bound and rejects one past it.
func TestLimits(t *testing.T) {
	t.Parallel()
	attrs := func(n, keyLen, valLen int) map[string]string {
		m := map[string]string{}
		for i := range n {
			k := fmt.Sprintf("%0*d", max(keyLen, 1), i)
			m[k[:max(keyLen, len(k))]] = strings.Repeat("v", valLen)
		}
		return m
	}
	nest := func(d int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", d) + strings.Repeat("]", d))
	}
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"run ID at MaxRunIDLength", worlds.ValidateRunID(strings.Repeat("r", worlds.MaxRunIDLength)), true},
		{"run ID past MaxRunIDLength", worlds.ValidateRunID(strings.Repeat("r", worlds.MaxRunIDLength+1)), false},
		{"run ID of 5000 bytes", worlds.ValidateRunID(strings.Repeat("r", 5000)), false},
		{"run ID charset", worlds.ValidateRunID("wrun_0193:ab-CD.9"), true},
		{"run ID with NUL", worlds.ValidateRunID("a\x00b"), false},
		{"run ID with slash", worlds.ValidateRunID("a/b"), false},
		{"run ID with hash", worlds.ValidateRunID("a#b"), false},
		{"run ID with space", worlds.ValidateRunID("a b"), false},
		{"run ID non-ASCII", worlds.ValidateRunID("café"), false},
		{"empty run ID", worlds.ValidateRunID(""), false},
		{"MaxAttributes", worlds.ValidateAttributes(attrs(worlds.MaxAttributes, 3, 1)), true},
		{"past MaxAttributes", worlds.ValidateAttributes(attrs(worlds.MaxAttributes+1, 3, 1)), false},
		{"2000 attributes", worlds.ValidateAttributes(attrs(2000, 4, 1)), false},
		{"key at MaxAttributeKeyLength", worlds.ValidateAttributes(attrs(1, worlds.MaxAttributeKeyLength, 1)), true},
		{"key past MaxAttributeKeyLength", worlds.ValidateAttributes(attrs(1, worlds.MaxAttributeKeyLength+1, 1)), false},
		{"value at MaxAttributeValueLength", worlds.ValidateAttributes(attrs(1, 3, worlds.MaxAttributeValueLength)), true},
		{"value past MaxAttributeValueLength", worlds.ValidateAttributes(attrs(1, 3, worlds.MaxAttributeValueLength+1)), false},
		{"empty key", worlds.ValidateAttributes(map[string]string{"": "v"}), false},
		{"control character in key", worlds.ValidateAttributes(map[string]string{"a\nb": "v"}), false},
		{"invalid UTF-8 value", worlds.ValidateAttributes(map[string]string{"k": "\xff"}), false},
		{"input at MaxInputBytes", worlds.ValidateJSON("input", json.RawMessage(`"`+strings.Repeat("x", worlds.MaxInputBytes-2)+`"`)), true},
		{"input past MaxInputBytes", worlds.ValidateJSON("input", json.RawMessage(`"`+strings.Repeat("x", worlds.MaxInputBytes-1)+`"`)), false},
		{"depth MaxJSONDepth", worlds.ValidateJSON("input", nest(worlds.MaxJSONDepth)), true},
		{"depth past MaxJSONDepth", worlds.ValidateJSON("input", nest(worlds.MaxJSONDepth+1)), false},
		{"number 1e999999", worlds.ValidateJSON("input", json.RawMessage(`{"n":1e999999}`)), false},
		{"number -1e400", worlds.ValidateJSON("input", json.RawMessage(`[-1e400]`)), false},
		{"number 1e308", worlds.ValidateJSON("input", json.RawMessage(`1e308`)), true},
		{"big integer", worlds.ValidateJSON("input", json.RawMessage(`12345678901234567890123`)), true},
		{"empty input", worlds.ValidateJSON("input", nil), true},
		{"two values", worlds.ValidateJSON("input", json.RawMessage(`1 2`)), false},
		{"invalid JSON", worlds.ValidateJSON("input", json.RawMessage(`{"a":}`)), false},
		{"reason at MaxAttributeValueLength", worlds.ValidateReason(strings.Repeat("x", worlds.MaxAttributeValueLength)), true},
		{"reason past MaxAttributeValueLength", worlds.ValidateReason(strings.Repeat("x", worlds.MaxAttributeValueLength+1)), false},
	} {
		if (tc.err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, tc.err, tc.ok)
		}
		if tc.err != nil && !errors.Is(tc.err, worlds.ErrInvalidArgument) {
			t.Errorf("%s: %v does not match ErrInvalidArgument", tc.name, tc.err)
		}
	}
}

// The error for a run ID shows the offending byte quoted, never raw.
func TestRunIDErrorQuotes(t *testing.T) {
	t.Parallel()
	err := worlds.ValidateRunID("a\x00b")
	if err == nil || strings.ContainsRune(err.Error(), 0) || !strings.Contains(err.Error(), `'\x00'`) {
		t.Fatalf("error %q: want the NUL quoted", err)
	}
}

func FuzzValidateJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `1e999999`, `[[[[]]]]`, `"\u0000"`, ``, `{`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := worlds.ValidateJSON("input", b)
		if err != nil && !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Fatalf("%q: %v is not an invalid argument", b, err)
		}
		if err == nil && len(b) > 0 {
			var v any
			if uerr := json.Unmarshal(b, &v); uerr != nil {
				t.Fatalf("%q accepted but does not decode: %v", b, uerr)
			}
		}
	})
}
