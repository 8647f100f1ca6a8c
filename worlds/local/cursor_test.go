package local

import (
	"errors"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// FuzzCursor: any string parses to a cursor or an ErrInvalidArgument, never a
// panic, and every cursor the World writes reads back as itself.
func FuzzCursor(f *testing.F) {
	f.Add("", int64(0), "")
	f.Add("MTIzOnJ1bi0x", int64(1733150000000000000), "run-1")
	f.Add("!!", int64(-1), "a:b:c")
	f.Fuzz(func(t *testing.T, s string, at int64, id string) {
		if _, _, err := parseCursor(s); err != nil && !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Fatalf("parseCursor(%q) = %v", s, err)
		}
		c := cursor{at: at, id: id}
		got, ok, err := parseCursor(c.String())
		if err != nil || !ok || got != c {
			t.Fatalf("round trip of %+v = %+v, %v, %v", c, got, ok, err)
		}
	})
}
