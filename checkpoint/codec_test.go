package checkpoint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/checkpoint"
)

var update = flag.Bool("update", false, "rewrite golden files")

func newCodec(t testing.TB, opts checkpoint.Options) *checkpoint.Codec {
	t.Helper()
	c, err := checkpoint.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kindOf(t *testing.T, err error, kind error) *checkpoint.Error {
	t.Helper()
	var ce *checkpoint.Error
	if !errors.As(err, &ce) || !errors.Is(err, kind) {
		t.Fatalf("error = %v, want *checkpoint.Error of kind %v", err, kind)
	}
	if !ce.Permanent() {
		t.Fatalf("checkpoint errors must be permanent")
	}
	return ce
}

// OrderV1 is the shape golden files of serializer version 1 were written with.
type OrderV1 struct {
	ID       string            `json:"id"`
	Quantity int64             `json:"quantity"`
	Price    json.Number       `json:"price"`
	Tags     []string          `json:"tags"`
	Meta     map[string]string `json:"meta"`
	Placed   time.Time         `json:"placed"`
	Note     *string           `json:"note"`
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range []checkpoint.Options{{MaxBytes: -1}, {MaxDepth: -1}, {Key: []byte("short")}} {
		var ae *checkpoint.ArgumentError
		if _, err := checkpoint.New(opts); !errors.As(err, &ae) {
			t.Errorf("New(%+v) = %v, want *ArgumentError", opts, err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	note := "leave at door <b>&</b>"
	in := OrderV1{ID: "o-1", Quantity: math.MaxInt64, Price: "19.990000000000000001", Tags: []string{},
		Placed: time.Date(2026, 10, 8, 12, 0, 0, 123456789, time.FixedZone("x", 3600)), Note: &note}
	b, err := c.Marshal("shop.Order", in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`<b>&</b>`)) {
		t.Errorf("HTML characters escaped: %s", b)
	}
	var out OrderV1
	if err := c.Unmarshal(b, "shop.Order", &out); err != nil {
		t.Fatal(err)
	}
	if !out.Placed.Equal(in.Placed) {
		t.Errorf("time %v != %v", out.Placed, in.Placed)
	}
	out.Placed = in.Placed
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip:\n got %#v\nwant %#v", out, in)
	}
	// nil map stays nil (null), empty slice stays empty ([]).
	if out.Meta != nil || out.Tags == nil || len(out.Tags) != 0 {
		t.Errorf("nil/empty not preserved: meta=%#v tags=%#v", out.Meta, out.Tags)
	}
}

func TestPreciseNumbers(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	type nums struct {
		Max     int64       `json:"max"`
		Min     int64       `json:"min"`
		Big     uint64      `json:"big"`
		Unsafe  int64       `json:"unsafe"` // 2^53+1: not representable as float64
		Decimal json.Number `json:"decimal"`
		Any     any         `json:"any"`
	}
	in := nums{Max: math.MaxInt64, Min: math.MinInt64, Big: math.MaxUint64, Unsafe: 1<<53 + 1, Decimal: "0.1000000000000000000001",
		Any: map[string]any{"n": json.Number("9007199254740993"), "d": json.Number("1e400")}}
	b, err := c.Marshal("nums", in)
	if err != nil {
		t.Fatal(err)
	}
	var out nums
	if err := c.Unmarshal(b, "nums", &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("got %#v\nwant %#v", out, in)
	}
	// Into an untyped target numbers are json.Number with their exact text.
	var loose map[string]any
	if err := c.Unmarshal(b, "nums", &loose); err != nil {
		t.Fatal(err)
	}
	if got := loose["unsafe"]; got != json.Number("9007199254740993") {
		t.Errorf("2^53+1 in any = %#v", got)
	}
	// A float64 target rounds, as JSON allows: documented, not an error.
	var f struct {
		Unsafe float64 `json:"unsafe"`
	}
	c2 := newCodec(t, checkpoint.Options{AllowUnknownFields: true})
	if err := c2.Unmarshal(b, "nums", &f); err != nil || f.Unsafe != 1<<53 {
		t.Errorf("float64 target = %v, %v", f.Unsafe, err)
	}
	// An int64 target with a number out of range fails with ErrSchema naming the field.
	over, _ := c.Marshal("n", map[string]json.Number{"max": "9223372036854775808"})
	var small struct {
		Max int64 `json:"max"`
	}
	ce := kindOf(t, c.Unmarshal(over, "n", &small), checkpoint.ErrSchema)
	if ce.Field != "max" {
		t.Errorf("field = %q", ce.Field)
	}
}

func TestNullVersusAbsent(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	type patch struct {
		Name  checkpoint.Optional[string] `json:"name,omitzero"`
		Email checkpoint.Optional[string] `json:"email,omitzero"`
		Age   checkpoint.Optional[int64]  `json:"age,omitzero"`
		Ptr   *string                     `json:"ptr"`
	}
	in := patch{Name: checkpoint.Some("ada"), Email: checkpoint.NullOf[string]()}
	b, err := c.Marshal("patch", in)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := c.Open(b)
	if got := string(env.Data); got != `{"name":"ada","email":null,"ptr":null}` {
		t.Errorf("data = %s", got)
	}
	var out patch
	if err := c.Unmarshal(b, "patch", &out); err != nil {
		t.Fatal(err)
	}
	if !out.Name.Present || out.Name.Null || out.Name.Value != "ada" {
		t.Errorf("name = %+v", out.Name)
	}
	if !out.Email.Present || !out.Email.Null {
		t.Errorf("email (null) = %+v", out.Email)
	}
	if out.Age.Present {
		t.Errorf("age (absent) = %+v", out.Age)
	}
	// A plain pointer cannot tell them apart: absent leaves it untouched, null sets nil.
	keep := "kept"
	out2 := patch{Ptr: &keep}
	b2, _ := c.Marshal("patch", map[string]any{})
	if err := c.Unmarshal(b2, "patch", &out2); err != nil || out2.Ptr != &keep {
		t.Errorf("absent pointer changed: %v %v", out2.Ptr, err)
	}
	if err := c.Unmarshal(b, "patch", &out2); err != nil || out2.Ptr != nil {
		t.Errorf("null pointer not cleared: %v %v", out2.Ptr, err)
	}
}

type celsius float64

func (c celsius) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"unit": "C", "value": float64(c)})
}

func (c *celsius) UnmarshalJSON(b []byte) error {
	var v struct {
		Unit  string  `json:"unit"`
		Value float64 `json:"value"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Unit != "C" {
		return errNotCelsius
	}
	*c = celsius(v.Value)
	return nil
}

var errNotCelsius = errors.New("not celsius")

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errBoom }

var errBoom = errors.New("boom")

type dupMarshaler struct{}

func (dupMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"a":1,"a":2}`), nil }

func TestCustomMarshalers(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	b, err := c.Marshal("temp", struct {
		T celsius `json:"t"`
	}{21.5})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		T celsius `json:"t"`
	}
	if err := c.Unmarshal(b, "temp", &out); err != nil || out.T != 21.5 {
		t.Fatalf("custom round trip = %v, %v", out.T, err)
	}
	// An UnmarshalJSON error is ErrSchema and keeps the business cause.
	bad, _ := c.Marshal("temp", map[string]any{"t": map[string]any{"unit": "F", "value": 70}})
	err = c.Unmarshal(bad, "temp", &out)
	kindOf(t, err, checkpoint.ErrSchema)
	if !errors.Is(err, errNotCelsius) {
		t.Errorf("cause lost: %v", err)
	}
	// A MarshalJSON error is ErrMarshal with its cause.
	_, err = c.Marshal("f", failing{})
	kindOf(t, err, checkpoint.ErrMarshal)
	if !errors.Is(err, errBoom) {
		t.Errorf("cause lost: %v", err)
	}
	// A marshaler that emits a member twice is caught when encoding.
	_, err = c.Marshal("d", dupMarshaler{})
	if kindOf(t, err, checkpoint.ErrDuplicateMember).Op != checkpoint.OpEncode {
		t.Errorf("want encode op: %v", err)
	}
	// Values encoding/json cannot encode.
	for _, v := range []any{math.NaN(), make(chan int), func() {}} {
		_, err := c.Marshal("x", v)
		kindOf(t, err, checkpoint.ErrMarshal)
	}
}

func TestChangedStructDefinitions(t *testing.T) {
	t.Parallel()
	strict := newCodec(t, checkpoint.Options{})
	lenient := newCodec(t, checkpoint.Options{AllowUnknownFields: true})
	old, err := strict.Marshal("user", struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		Age   int    `json:"age"`
	}{"ada", "ada@example.com", 36})
	if err != nil {
		t.Fatal(err)
	}
	type added struct {
		Name    string `json:"name"`
		Email   string `json:"email"`
		Age     int    `json:"age"`
		Country string `json:"country"`
	}
	type removed struct {
		Name string `json:"name"`
		Age  int    `json:"age"`
	}
	type renamed struct {
		Name string `json:"name"`
		Mail string `json:"mail"`
		Age  int    `json:"age"`
	}
	type retyped struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		Age   string `json:"age"`
	}
	type recased struct {
		Name  string `json:"Name"`
		Email string `json:"email"`
		Age   int    `json:"age"`
	}
	tests := []struct {
		name  string
		codec *checkpoint.Codec
		into  any
		kind  error // nil: succeeds
		field string
	}{
		{"field added: zero value", strict, &added{}, nil, ""},
		{"field removed: strict rejects", strict, &removed{}, checkpoint.ErrUnknownField, "/email"},
		{"field removed: lenient drops", lenient, &removed{}, nil, ""},
		{"field renamed: strict rejects old name", strict, &renamed{}, checkpoint.ErrUnknownField, "/email"},
		{"field renamed: lenient leaves new field empty", lenient, &renamed{}, nil, ""},
		{"field type changed", strict, &retyped{}, checkpoint.ErrSchema, "age"},
		{"member name case changed", lenient, &recased{}, checkpoint.ErrUnknownField, "/name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.codec.Unmarshal(old, "user", tt.into)
			if tt.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if ce := kindOf(t, err, tt.kind); ce.Field != tt.field {
				t.Errorf("field = %q, want %q (%v)", ce.Field, tt.field, err)
			}
		})
	}
	var a added
	_ = strict.Unmarshal(old, "user", &a)
	if a != (added{Name: "ada", Email: "ada@example.com", Age: 36}) {
		t.Errorf("added = %+v", a)
	}
	var r renamed
	_ = lenient.Unmarshal(old, "user", &r)
	if r.Mail != "" || r.Name != "ada" {
		t.Errorf("renamed = %+v", r)
	}
}

func TestRejectsBadInput(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	good, _ := c.Marshal("t", map[string]any{"a": "x"})
	env := func(data string) []byte {
		// An envelope with a valid sum for data, written by hand.
		var e map[string]json.RawMessage
		_ = json.Unmarshal(good, &e)
		b, _ := c.Marshal("t", json.RawMessage(data))
		_ = e
		return b
	}
	tests := []struct {
		name  string
		in    []byte
		kind  error
		field string
	}{
		{"empty", []byte(``), checkpoint.ErrSyntax, ""},
		{"truncated", good[:len(good)-1], checkpoint.ErrSyntax, ""},
		{"trailing data", append(append([]byte{}, good...), " {}"...), checkpoint.ErrSyntax, ""},
		{"invalid UTF-8 byte", []byte("{\"v\":1,\"type\":\"t\",\"data\":\"\xff\",\"sum\":\"\"}"), checkpoint.ErrInvalidUTF8, "/data"},
		{"lone surrogate escape", []byte(`{"v":1,"type":"t","data":"\ud800","sum":""}`), checkpoint.ErrInvalidUTF8, "/data"},
		{"duplicate envelope member", []byte(`{"v":1,"v":2,"type":"t","data":1,"sum":""}`), checkpoint.ErrDuplicateMember, "/v"},
		{"duplicate nested member", []byte(`{"v":1,"type":"t","data":{"a":{"b":1,"b":2}},"sum":""}`), checkpoint.ErrDuplicateMember, "/data/a/b"},
		{"duplicate after unescaping", []byte(`{"v":1,"type":"t","data":{"a":1,"\u0061":2},"sum":""}`), checkpoint.ErrDuplicateMember, "/data/a"},
		{"too deep", []byte(`{"v":1,"type":"t","data":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `,"sum":""}`), checkpoint.ErrTooDeep, ""},
		{"missing sum", []byte(`{"v":1,"type":"t","data":1}`), checkpoint.ErrEnvelope, "sum"},
		{"missing data", []byte(`{"v":1,"type":"t","sum":""}`), checkpoint.ErrEnvelope, "data"},
		{"extra member", []byte(`{"v":1,"type":"t","data":1,"sum":"","x":1}`), checkpoint.ErrEnvelope, ""},
		{"case-folded member", []byte(`{"V":1,"type":"t","data":1,"sum":""}`), checkpoint.ErrEnvelope, ""},
		{"future version", bytes.Replace(good, []byte(`"v":1`), []byte(`"v":2`), 1), checkpoint.ErrUnsupportedVersion, "v"},
		{"version as float", bytes.Replace(good, []byte(`"v":1`), []byte(`"v":1.0`), 1), checkpoint.ErrUnsupportedVersion, "v"},
		{"tampered data", bytes.Replace(good, []byte(`"x"`), []byte(`"y"`), 1), checkpoint.ErrTampered, "sum"},
		{"tampered type", bytes.Replace(good, []byte(`"type":"t"`), []byte(`"type":"u"`), 1), checkpoint.ErrTampered, "sum"},
		{"valid JSON, wrong type", env(`1`), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v map[string]any
			err := c.Unmarshal(tt.in, "t", &v)
			if tt.kind == nil {
				kindOf(t, err, checkpoint.ErrSchema)
				return
			}
			ce := kindOf(t, err, tt.kind)
			if tt.field != "" && ce.Field != tt.field {
				t.Errorf("field = %q, want %q (%v)", ce.Field, tt.field, err)
			}
		})
	}
	var v map[string]any
	kindOf(t, c.Unmarshal(good, "other", &v), checkpoint.ErrTypeMismatch)
	kindOf(t, c.Unmarshal(good, "t", v), checkpoint.ErrSchema) // not a pointer
}

func TestInvalidUTF8OnEncode(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	_, err := c.Marshal("s", struct {
		Names []string `json:"names"`
	}{[]string{"ok", "bad\xffbyte"}})
	if ce := kindOf(t, err, checkpoint.ErrInvalidUTF8); ce.Field != "/names/1" || ce.Op != checkpoint.OpEncode {
		t.Errorf("got %+v", ce)
	}
	_, err = c.Marshal("", 1)
	kindOf(t, err, checkpoint.ErrMarshal)
}

func TestSizeLimit(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{MaxBytes: 1024})
	small, err := c.Marshal("blob", strings.Repeat("a", 900))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Marshal("blob", strings.Repeat("a", 1024))
	ce := kindOf(t, err, checkpoint.ErrTooLarge)
	if ce.Limit != 1024 || ce.Size <= 1024 || !strings.Contains(err.Error(), "bytes exceeds the limit of 1024") {
		t.Errorf("error = %v (%+v)", err, ce)
	}
	// Exactly at the limit is accepted; one byte over is not.
	pad := 1024 - len(small)
	at, err := c.Marshal("blob", strings.Repeat("a", 900+pad))
	if err != nil || len(at) != 1024 {
		t.Fatalf("at limit: %d %v", len(at), err)
	}
	var s string
	if err := c.Unmarshal(at, "blob", &s); err != nil {
		t.Fatal(err)
	}
	big := newCodec(t, checkpoint.Options{MaxBytes: 4096})
	over, _ := big.Marshal("blob", strings.Repeat("a", 900+pad+1))
	ce = kindOf(t, c.Unmarshal(over, "blob", &s), checkpoint.ErrTooLarge)
	if ce.Size != 1025 || ce.Op != checkpoint.OpDecode {
		t.Errorf("decode size error = %+v", ce)
	}
}

func TestKeyedSum(t *testing.T) {
	t.Parallel()
	keyed := newCodec(t, checkpoint.Options{Key: []byte("0123456789abcdef")})
	other := newCodec(t, checkpoint.Options{Key: []byte("fedcba9876543210")})
	plain := newCodec(t, checkpoint.Options{})
	b, err := keyed.Marshal("t", 1)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := keyed.Unmarshal(b, "t", &n); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	kindOf(t, other.Unmarshal(b, "t", &n), checkpoint.ErrTampered)
	kindOf(t, plain.Unmarshal(b, "t", &n), checkpoint.ErrTampered)
	// A forger without the key cannot downgrade to an unkeyed sum.
	forged, _ := plain.Marshal("t", 2)
	kindOf(t, keyed.Unmarshal(forged, "t", &n), checkpoint.ErrTampered)
}

// TestGoldenV1 reads envelopes of serializer version 1 committed to testdata, so
// a later release that stops reading them fails here.
func TestGoldenV1(t *testing.T) {
	t.Parallel()
	c := newCodec(t, checkpoint.Options{})
	note := "fragile"
	want := OrderV1{ID: "o-42", Quantity: 1<<53 + 1, Price: "12345678901234567890.123456789",
		Tags: []string{"a", "ü", "😀"}, Placed: time.Date(2026, 10, 8, 9, 30, 0, 5, time.UTC), Note: &note}
	path := filepath.Join("testdata", "v1-order.json")
	if *update {
		b, err := c.Marshal("shop.Order", want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got OrderV1
	if err := c.Unmarshal(bytes.TrimSpace(b), "shop.Order", &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("golden v1:\n got %#v\nwant %#v", got, want)
	}
	// The encoder still writes byte-identical version-1 envelopes.
	again, _ := c.Marshal("shop.Order", want)
	if !bytes.Equal(again, bytes.TrimSpace(b)) {
		t.Errorf("encoder output drifted from golden:\n%s\n%s", again, b)
	}
	// A hand-formatted (indented) v1 envelope with the same sum is still valid:
	// the sum covers the compact data, so a store that re-indents does not break it.
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, bytes.TrimSpace(b), "", "  ")
	if err := c.Unmarshal(pretty.Bytes(), "shop.Order", &got); err != nil {
		t.Errorf("indented envelope: %v", err)
	}
}

// TestFreshProcesses writes a checkpoint in one child process and reads it in
// another, so nothing (type caches, map order, pointers) leaks through memory.
func TestFreshProcesses(t *testing.T) {
	t.Parallel()
	if os.Getenv("CHECKPOINT_CHILD") != "" {
		t.Skip("child")
	}
	file := filepath.Join(t.TempDir(), "cp.json")
	run := func(mode string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v")
		cmd.Env = append(os.Environ(), "CHECKPOINT_CHILD="+mode, "CHECKPOINT_FILE="+file)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s child: %v\n%s", mode, err, out)
		}
		return string(out)
	}
	run("write")
	out := run("read")
	if !strings.Contains(out, "READ OK") {
		t.Fatalf("read child did not verify:\n%s", out)
	}
}

func TestChild(t *testing.T) {
	mode, file := os.Getenv("CHECKPOINT_CHILD"), os.Getenv("CHECKPOINT_FILE")
	if mode == "" {
		t.Skip("only run as a child of TestFreshProcesses")
	}
	c := newCodec(t, checkpoint.Options{})
	want := map[string]any{"pid-independent": json.Number("9007199254740993"), "m": map[string]any{"z": "1", "a": "2", "k": []any{nil, true}}}
	switch mode {
	case "write":
		b, err := c.Marshal("child", want)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	case "read":
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := c.Unmarshal(b, "child", &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %#v", got)
		}
		t.Log("READ OK")
	}
}
