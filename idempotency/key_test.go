package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
)

func TestCanonicalJSONGoValues(t *testing.T) {
	t.Parallel()
	type inner struct {
		Z int    `json:"Z"`
		A string `json:"a"`
	}
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "A": []any{3, 2}, "a": inner{1, "<&>"}}, `{"A":[3,2],"a":{"a":"<&>","Z":1},"b":1}`},
		{int64(12345678901234567), `12345678901234568`},
		{-0.0, `0`},
		{1e21, `1e+21`},
		{"\u2028", "\"\u2028\""},
		{json.RawMessage(`{"b":1,"B":2}`), `{"b":1,"B":2}`},
		{json.RawMessage(`{"B":2,"b":1}`), `{"B":2,"b":1}`},
		{nil, `null`},
		{map[string]any{"b": "B", "B": "b", "é": 1, "E": 2, "10": 3, "9": 4}, `{"9":4,"10":3,"B":"b","b":"B","E":2,"é":1}`},
		{[]any{uint64(18446744073709551615), int64(-9007199254740993), uint32(7), int32(-7), uint(1), 2.5, true, nil, []any(nil), map[string]any(nil)}, `[18446744073709552000,-9007199254740992,7,-7,1,2.5,true,null,null,null]`},
		{map[string]any{"s": "a\xffb", "f": float32(0.1)}, "{\"f\":0.1,\"s\":\"a\ufffdb\"}"},
		{map[string]any{"r": json.RawMessage(`{"Z":1,"a":2}`), "n": json.Number("1e3")}, `{"n":1000,"r":{"a":2,"Z":1}}`},
	} {
		got, err := idempotency.CanonicalJSON(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("CanonicalJSON(%#v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := idempotency.Key("p", 1, "crc32"); err == nil {
		t.Error("unknown algorithm accepted")
	}
}

// FuzzCanonicalJSON: the output is valid UTF-8 JSON that decodes to the same value as
// the input (for inputs encoding/json and JavaScript decode alike), and canonicalising
// it again changes nothing.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"id":"ORD-123","amount":42}`, `{"b":[1,2,{"D":1,"c":2}],"a":null}`, `[1e21,-0,0.1]`, `"\ud83d\ude00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		out, err := idempotency.CanonicalJSON(json.RawMessage(data))
		if err != nil {
			var a any
			if json.Unmarshal(data, &a) == nil {
				t.Fatalf("CanonicalJSON(%s): %v", data, err)
			}
			return
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		again, err := idempotency.CanonicalJSON(json.RawMessage(out))
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %s -> %s (%v)", out, again, err)
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil {
			return
		}
		// Decoded Go values take the direct conversion; it must agree with encoding
		// them and canonicalising the encoding.
		direct, err := idempotency.CanonicalJSON(a)
		if err != nil {
			t.Fatalf("CanonicalJSON(%#v): %v", a, err)
		}
		encoded, _ := json.Marshal(a)
		if via, err := idempotency.CanonicalJSON(json.RawMessage(encoded)); err != nil || string(direct) != string(via) {
			t.Fatalf("direct conversion %s, via encoding/json %s (%v)", direct, via, err)
		}
		if !utf8.Valid(data) || strings.Contains(string(data), "__proto__") {
			return
		}
		if err := json.Unmarshal(out, &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed: %s -> %s (%v)", data, out, err)
		}
	})
}

// TestKeysWithPooledScratch derives keys concurrently for payloads of every size
// (past the pooled arena's capacity) and shapes (structs, dynamic values, raw JSON),
// and checks them against digests of CanonicalJSON, which uses no pooled state.
func TestKeysWithPooledScratch(t *testing.T) {
	t.Parallel()
	m := newManager(t, idempotencytest.NewMemoryStore(), func(o *idempotency.Options) {
		o.EventKeyJMESPath, o.PayloadValidationJMESPath = "[id, items]", "items[*].sku"
	})
	type item struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	type payload struct {
		ID    string `json:"id"`
		Items []item `json:"items"`
	}
	digest := func(v any) string {
		canon, err := idempotency.CanonicalJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		k, err := idempotency.Key("", json.RawMessage(canon), idempotency.MD5)
		if err != nil {
			t.Fatal(err)
		}
		return k[1:]
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := range 120 {
				p := payload{ID: fmt.Sprintf("ORD-%d-%d", g, n), Items: []item{}}
				for i := range n {
					p.Items = append(p.Items, item{SKU: fmt.Sprintf("S%d", i), Qty: i})
				}
				raw, _ := json.Marshal(p)
				var dynamic any
				_ = json.Unmarshal(raw, &dynamic)
				skus := []string{}
				for _, it := range p.Items {
					skus = append(skus, it.SKU)
				}
				wantKey := "process-order#" + digest([]any{p.ID, p.Items})
				wantHash := digest(skus)
				for _, in := range []any{p, dynamic, json.RawMessage(raw)} {
					key, vhash, ok, err := m.Key(in)
					if err != nil || !ok || key != wantKey || vhash != wantHash {
						t.Errorf("Key(%T with %d items) = %s, %s, %v, %v; want %s, %s", in, n, key, vhash, ok, err, wantKey, wantHash)
						return
					}
				}
				// The raw payload is copied, not aliased: changing it afterwards
				// changes nothing already derived.
				key, _, _, _ := m.Key(json.RawMessage(raw))
				clear(raw)
				if key != wantKey {
					t.Errorf("key changed with the payload buffer: %s", key)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkKey(b *testing.B) {
	payload := map[string]any{"id": "ORD-123", "amount": 42, "items": []any{map[string]any{"sku": "A", "qty": 1}, map[string]any{"sku": "B", "qty": 2}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := idempotency.Key("p", payload, idempotency.MD5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecute reports the manager's overhead without I/O and the store requests
// per call: a first call costs a conditional put and an update, a replay one request,
// a replay from the local cache none.
func BenchmarkExecute(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) (receipt, error) { return receipt{OrderID: "ORD-1"}, nil }
	run := func(b *testing.B, cache bool, fresh bool) {
		store := idempotencytest.NewMemoryStore()
		m := newManager(b, store, func(o *idempotency.Options) { o.LocalCache = cache })
		if !fresh {
			if _, err := idempotency.Execute(ctx, m, order{"ORD-1", 42}, fn); err != nil {
				b.Fatal(err)
			}
		}
		start := store.Requests()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			id := "ORD-1"
			if fresh {
				i++
				id = "ORD-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + string(rune('a'+i/17576%26))
			}
			if _, err := idempotency.Execute(ctx, m, order{id, 42}, fn); err != nil && fresh {
				// keys repeat after 26^4 calls; a replay is fine
				_ = err
			}
		}
		b.ReportMetric(float64(store.Requests()-start)/float64(b.N), "requests/op")
	}
	b.Run("first_call", func(b *testing.B) { run(b, false, true) })
	b.Run("replay", func(b *testing.B) { run(b, false, false) })
	b.Run("replay_local_cache", func(b *testing.B) { run(b, true, false) })
}
