package idempotency

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeResponseIsUnmarshal checks that the pooled decoder gives json.Unmarshal's
// result and error for every input, in any order, including inputs a json.Decoder
// treats differently (trailing data, whitespace only, top-level scalars).
func TestDecodeResponseIsUnmarshal(t *testing.T) {
	t.Parallel()
	type rec struct {
		A string          `json:"a"`
		B []int           `json:"b"`
		M map[string]any  `json:"m"`
		R json.RawMessage `json:"r"`
	}
	inputs := []string{
		`{"a":"x","b":[1,2],"m":{"k":1},"r":{"z":[1]}}`, `{"a":"y"}`, ` {"a":"pad"} `, `{"a":"x"} {"a":"y"}`,
		`{"a":"x"}garbage`, `{"a":`, `   `, `null`, `"str"`, `42`, `{"b":"not ints"}`, `{"a":"\u00e9\ud800"}`,
		`[1,2]`, `{"a":"` + strings.Repeat("z", 40<<10) + `"}`, `{"m":{"a":{"b":{"c":[true,false,null]}}}}`,
	}
	for round := range 3 {
		for _, in := range inputs {
			var got, want rec
			gotErr := decodeResponse([]byte(in), &got)
			wantErr := json.Unmarshal([]byte(in), &want)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || reflect.TypeOf(gotErr) != reflect.TypeOf(wantErr) {
				t.Errorf("round %d, %.30q: error %v, want %v", round, in, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round %d, %.30q: got %+v, want %+v", round, in, got, want)
			}
			var gs, ws any
			if fmt.Sprint(decodeResponse([]byte(in), &gs)) != fmt.Sprint(json.Unmarshal([]byte(in), &ws)) || !reflect.DeepEqual(gs, ws) {
				t.Errorf("round %d, %.30q into any: got %v, want %v", round, in, gs, ws)
			}
		}
	}
}

// TestDecodeResponseCopies checks that decoded values do not alias the pooled
// decoder's buffer, which the next response overwrites.
func TestDecodeResponseCopies(t *testing.T) {
	t.Parallel()
	type rec struct {
		S string          `json:"s"`
		R json.RawMessage `json:"r"`
		B []byte          `json:"b"`
	}
	var first rec
	if err := decodeResponse([]byte(`{"s":"first","r":{"k":"v"},"b":"AQID"}`), &first); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		var other rec
		if err := decodeResponse([]byte(`{"s":"XXXXX","r":{"X":"X"},"b":"BAUG"}`), &other); err != nil {
			t.Fatal(err)
		}
	}
	if first.S != "first" || string(first.R) != `{"k":"v"}` || string(first.B) != "\x01\x02\x03" {
		t.Errorf("first response changed: %+v", first)
	}
}
