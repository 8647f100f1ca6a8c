package jmespath

import (
	"errors"
	"testing"

	"github.com/cairn-go/cairn/internal/jsvalue"
)

func eval(t *testing.T, expr, data string) (string, bool) {
	t.Helper()
	e, err := Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	v, err := jsvalue.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Search(v)
	if err != nil {
		t.Fatalf("Search(%q): %v", expr, err)
	}
	out, ok := jsvalue.Stringify(r)
	return string(out), ok
}

func TestSearch(t *testing.T) {
	t.Parallel()
	const data = `{"a":{"b":[{"c":1,"d":"x"},{"c":2,"d":"y"},{"c":3}]},"s":"héllo","n":0,"e":"","o":{"Z":1,"y":2},"l":[[1,2],[3],4]}`
	for _, tc := range []struct{ expr, want string }{
		{"a.b[0].c", "1"},
		{"a.b[-1].c", "3"},
		{"a.b[5]", "null"},
		{"a.b[*].d", `["x","y"]`},
		{"a.b[?c > `1`].c", "[2,3]"},
		{"a.b[?d == 'x'] | [0].c", "1"},
		{"a.b[:2].c", "[1,2]"},
		{"a.b[::-1].c", "[3,2,1]"},
		{"l[]", "[1,2,3,4]"},
		{"o.*", "[1,2]"},
		{"keys(o)", `["Z","y"]`},
		{"length(s)", "5"},
		{"reverse(s)", `"olléh"`},
		{"n || 'fallback'", "0"},
		{"e || 'fallback'", `"fallback"`},
		{"!n", "false"},
		{"!e", "true"},
		{"not_null(missing, n, 'x')", "null"},
		{"map(&c, a.b)", "[1,2,3]"},
		{"max_by(a.b, &c).c", "3"},
		{"min_by(a.b, &c).c", "1"},
		{"to_number('0x10')", "16"},
		{"to_number(' 1.5e3 ')", "1500"},
		{"to_number('abc')", "null"},
		{"to_string(`[1,\"a\"]`)", `"[1,\"a\"]"`},
		{"type(@)", `"object"`},
		{"contains(s, 'll')", "true"},
		{"contains(`[1,2]`, `2`)", "true"},
		{"starts_with(s, 'hé')", "true"},
		{"{x: a.b[0].c, __proto__: n}", `{"x":1}`},
		{"merge(o, `{\"__proto__\":1}`)", `{"Z":1,"y":2,"__proto__":1}`},
		{"[s, missing]", `["héllo",null]`},
		{"powertools_json('{\"k\":[1]}').k", "[1]"},
		{"powertools_base64('aMOp')", `"hé"`},
		{"powertools_base64('not base64!')", ""},
		{"powertools_json('nope')", ""},
		{"[`1` < 'a']", "[null]"},
		{"\"a\".\"b\"[1].c", "2"},
		{"a.b[?c >= `2`] | length(@)", "2"},
		{"sort_by(a.b, &c)[0].d", `"x"`},
		{"avg(`[]`)", "null"},
		{"`\"lit\"`", `"lit"`},
		{"'it\\'s'", `"it's"`},
	} {
		got, ok := eval(t, tc.expr, data)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"a.", "a[", "[1", "{a}", "a ==", "foo(", "`{bad`", "'unterminated", "a[1:2:0]", "unknown_fn(a)", `"q"(a)`, "a = b", "#"} {
		if _, err := Compile(expr); !errors.Is(err, ErrSyntax) {
			t.Errorf("Compile(%q) = %v, want ErrSyntax", expr, err)
		}
	}
	e, _ := Compile("length(`1`)")
	if _, err := e.Search(jsvalue.NullValue); !errors.Is(err, ErrEval) {
		t.Errorf("type error: %v", err)
	}
	e, _ = Compile("abs(`1`, `2`)")
	if _, err := e.Search(jsvalue.NullValue); !errors.Is(err, ErrEval) {
		t.Errorf("arity error: %v", err)
	}
}

// FuzzSearch: arbitrary expressions over arbitrary JSON never panic, and errors are
// always ErrSyntax or ErrEval.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"a.b[0]", "a[?b>`1`].c", "powertools_json(body).id", "{a: b, c: [d, e]}", "sort_by(@, &x)", "a[::-1] | [0]", "!(a || b) && c"} {
		f.Add(s, []byte(`{"a":{"b":[1,2]},"body":"{\"id\":1}"}`))
	}
	f.Fuzz(func(t *testing.T, expr string, data []byte) {
		e, err := Compile(expr)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Compile(%q): %v", expr, err)
			}
			return
		}
		v, err := jsvalue.Parse(data)
		if err != nil {
			v = jsvalue.NullValue
		}
		if _, err := e.Search(v); err != nil && !errors.Is(err, ErrEval) {
			t.Fatalf("Search(%q): %v", expr, err)
		}
	})
}

func TestEmbeddedJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr, data    string
		at, rewritten string
		ok            bool
	}{
		{"body.id", `{"body":"{\"id\":\"ORD-1\"}"}`, "body", "powertools_json(body).id", true},
		{"detail.body.order.id", `{"detail":{"body":" [1]"}}`, "detail.body", "powertools_json(detail.body).order.id", true},
		{"id", `"{\"id\":1}"`, "@", "powertools_json(@).id", true},
		{`"my-body".id`, `{"my-body":"{}"}`, `"my-body"`, `powertools_json("my-body").id`, true},
		{"body[0]", `"[1]"`, "@", "", true},
		{"body.id", `{"body":"plain text"}`, "", "", false},
		{"body.id", `{"body":"{not json"}`, "", "", false},
		{"body.id", `{"body":{"id":null}}`, "", "", false},
		{"body.id", `{"other":1}`, "", "", false},
		{"body[0]", `{"body":"[1]"}`, "", "", false},
	} {
		e, err := Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsvalue.Parse([]byte(tc.data))
		if err != nil {
			t.Fatal(err)
		}
		at, rewritten, ok := e.EmbeddedJSON(v)
		if at != tc.at || rewritten != tc.rewritten || ok != tc.ok {
			t.Errorf("%s on %s: got %q %q %v, want %q %q %v", tc.expr, tc.data, at, rewritten, ok, tc.at, tc.rewritten, tc.ok)
		}
	}
}
