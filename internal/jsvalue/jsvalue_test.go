package jsvalue

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	a, b := 0.1, 0.2
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {a + b, "0.30000000000000004"},
		{1e21, "1e+21"}, {1e20, "100000000000000000000"}, {123456789012345680000, "123456789012345680000"},
		{1e-7, "1e-7"}, {1e-6, "0.000001"}, {1.5e300, "1.5e+300"}, {5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {12345678901234567890, "12345678901234567000"},
		{9007199254740993, "9007199254740992"}, {-1.25e-10, "-1.25e-10"}, {100, "100"}, {2.5, "2.5"},
		{123.456, "123.456"}, {1.2e21, "1.2e+21"}, {0.000123, "0.000123"},
		{math.Inf(1), "Infinity"}, {math.NaN(), "NaN"},
	} {
		if got := FormatNumber(tc.f); got != tc.want {
			t.Errorf("FormatNumber(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

func TestToLowerJS(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ABC": "abc", "İ": "i\u0307", "ΑΣ": "ας", "Σ": "σ", "ΑΣΑ": "ασα", "ǅ": "ǆ", "ß": "ß", "Ä": "ä",
		FromUTF16([]uint16{0xD800, 'A'}): FromUTF16([]uint16{0xD800, 'a'}),
	} {
		if got := ToLowerJS(in); got != want {
			t.Errorf("ToLowerJS(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestObjectKeyOrder(t *testing.T) {
	t.Parallel()
	v, err := Parse([]byte(`{"b":1,"10":2,"2":3,"a":4,"01":5,"4294967295":6,"4294967294":7,"b":8}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2", "10", "4294967294", "b", "a", "01", "4294967295"}
	if got := v.Obj.Keys(); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	if b, _ := v.Obj.Get("b"); b.N != 8 {
		t.Fatalf("duplicate key kept %v", b.N)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `+1`, `"a` + "\x01" + `"`, `"\x"`, `"\u12"`, `nul`, `[1] 2`, `NaN`, `'a'`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

// FuzzCanonicalRoundTrip: the canonical form re-parses to the same value, is a fixed
// point, and agrees with encoding/json on the decoded value wherever both decoders
// define the same value.
func FuzzCanonicalRoundTrip(f *testing.F) {
	for _, s := range []string{`{"b":1,"B":2,"a":[1,{"y":1,"X":2}]}`, `"\ud800x"`, `[-0,1e21,1e-7,0.1]`, `{"__proto__":1}`, `12345678901234567890`, `"\u2028<>&"`, `{"10":1,"9":2}`, `{"É":1,"e":2,"a":3,"1":0,"_":4,"Z":5}`, `{"b":{"D":[{"c":1,"C":2}],"d":null},"a":"é\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		out, ok := AppendCanonical(nil, v)
		if !ok {
			t.Fatal("undefined from parsed JSON")
		}
		if want, _ := Stringify(DeepSort(v)); string(out) != string(want) {
			t.Fatalf("AppendCanonical differs from Stringify(DeepSort):\n got %s\nwant %s", out, want)
		}
		if len(data) > 1 && data[0] == '"' && data[len(data)-1] == '"' && !bytes.ContainsAny(data, "\\\x00") {
			if want := FromGo(string(data[1 : len(data)-1])); v.S != want {
				t.Fatalf("string %q parsed as %q, want %q", data, v.S, want)
			}
		}
		if !utf8.Valid(out) {
			t.Fatalf("output is not UTF-8: %q", out)
		}
		v2, err := Parse(out)
		if err != nil {
			t.Fatalf("output %q does not re-parse: %v", out, err)
		}
		out2, _ := AppendCanonical(nil, v2)
		if string(out2) != string(out) {
			t.Fatalf("not a fixed point:\n%s\n%s", out, out2)
		}
		if !utf8.Valid(data) || strings.Contains(string(data), "__proto__") {
			return
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil {
			return // e.g. numbers beyond float64 range, which JavaScript holds as Infinity
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed:\n in %s\nout %s", data, out)
		}
	})
}

// jsNumberString is Number::toString by a second route: strconv's shortest digits,
// plain for 1e-6 <= |x| < 1e21 and otherwise exponential without exponent padding.
func jsNumberString(x float64) string {
	if x == 0 {
		return "0"
	}
	if a := math.Abs(x); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	s := strconv.FormatFloat(x, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + digits
}

func FuzzFormatNumber(f *testing.F) {
	for _, x := range []float64{0, 1, -1.5, 1e21, 1e-7, 5e-324, math.MaxFloat64, 0.1 + 0.2, 1e-6, 123456789012345680000, 9007199254740993, -9007199254740991, 0.000001234, 1.5e300} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		s := FormatNumber(x)
		if want := jsNumberString(x); s != want {
			t.Fatalf("FormatNumber(%v) = %s, want %s", x, s, want)
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || (back != x && !(x == 0 && back == 0)) {
			t.Fatalf("FormatNumber(%v) = %s does not round-trip (%v, %v)", x, s, back, err)
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("FormatNumber(%v) = %s is not a JSON number", x, s)
		}
		if s != strconv.FormatFloat(x, 'g', -1, 64) && len(strings.TrimLeft(strings.SplitN(strings.SplitN(s, "e", 2)[0], ".", 2)[0], "-")) > 21 {
			t.Fatalf("integer part too long: %s", s)
		}
	})
}

// TestLowercaseMatchesNode compares ToLowerJS with String.prototype.toLowerCase of
// the Node.js that generated the golden files, for every code point.
func TestLowercaseMatchesNode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../idempotency/testdata/lowercase.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string][]rune
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) < 1400 {
		t.Fatalf("only %d mappings", len(m))
	}
	bad := 0
	for cp := rune(0); cp <= 0x10FFFF; cp++ {
		if cp >= 0xD800 && cp <= 0xDFFF {
			continue
		}
		want := string(cp)
		if r, ok := m[strconv.Itoa(int(cp))]; ok {
			want = string(r)
		}
		if got := ToLowerJS(string(cp)); got != want {
			if bad++; bad <= 10 {
				t.Errorf("U+%04X lowercases to %q, Node gives %q", cp, got, want)
			}
		}
	}
}

func BenchmarkParseCanonical(b *testing.B) {
	data := []byte(`{"id":"ORD-123","amount":42,"items":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`)
	b.ReportAllocs()
	var c Canonicalizer
	var buf []byte
	for b.Loop() {
		v, err := ParseOwned(data)
		if err != nil {
			b.Fatal(err)
		}
		buf, _ = c.Append(buf[:0], v)
	}
}

// TestParseIntegersAsParseFloat checks the integer fast path against ParseFloat.
func TestParseIntegersAsParseFloat(t *testing.T) {
	t.Parallel()
	for _, lit := range []string{"0", "-0", "7", "-7", "42", "123456789012345", "-123456789012345", "999999999999999",
		"1234567890123456", "9007199254740993", "12345678901234567890", "1.5", "-0.0", "1e3", "10E-1"} {
		v, err := Parse([]byte(lit))
		if err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		want, _ := strconv.ParseFloat(lit, 64)
		if v.Kind != Number || math.Float64bits(v.N) != math.Float64bits(want) {
			t.Errorf("%s parsed as %v (bits %x), want %v (bits %x)", lit, v.N, math.Float64bits(v.N), want, math.Float64bits(want))
		}
	}
}
