package jsvalue

import (
	"fmt"
	"strings"
	"testing"
)

// TestArenaMatchesHeap parses documents in one reused arena, from small ones to ones
// that spill past its capacity, and checks they serialise as heap-parsed ones do.
func TestArenaMatchesHeap(t *testing.T) {
	t.Parallel()
	big := func(n int) string {
		var sb strings.Builder
		sb.WriteString(`{"list":[`)
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"Id":%d,"b":[1,{},[]],"0":"x","a":{"k":"v"}}`, i)
		}
		sb.WriteString(`],"z":{}}`)
		return sb.String()
	}
	docs := []string{`{}`, `[]`, `"s"`, `{"b":1,"a":[true,null,{"c":"d"}]}`, `{"2":1,"1":2,"x":{}}`, big(3), big(40), big(200)}
	var a Arena
	for round := range 2 {
		for _, doc := range docs {
			want, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseOwnedIn(&a, []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			w, _ := AppendCanonical(nil, want)
			g, _ := AppendCanonical(nil, got)
			if string(g) != string(w) {
				t.Errorf("round %d: canonical form of %.40s…\n got %s\nwant %s", round, doc, g, w)
			}
			ws, _ := Stringify(want)
			gs, _ := Stringify(got)
			if string(gs) != string(ws) {
				t.Errorf("round %d: Stringify of %.40s…\n got %s\nwant %s", round, doc, gs, ws)
			}
			a.Reset()
		}
	}
}

// TestArenaSlicesAreCapped checks that growing an arena object or array reallocates
// instead of writing over its neighbour in the arena.
func TestArenaSlicesAreCapped(t *testing.T) {
	t.Parallel()
	var a Arena
	v, err := ParseOwnedIn(&a, []byte(`[{"a":1},{"b":2},[1],[2]]`))
	if err != nil {
		t.Fatal(err)
	}
	v.Arr[0].Obj.Define("c", Num(3))
	_ = append(v.Arr[2].Arr, Num(9))
	s, _ := Stringify(v)
	if want := `[{"a":1,"c":3},{"b":2},[1],[2]]`; string(s) != want {
		t.Errorf("got %s, want %s", s, want)
	}
}
