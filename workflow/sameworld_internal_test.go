package workflow

import (
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// wrapped stands in for a World, as a tracing wrapper or an eager start's World does.
type wrapped struct {
	worlds.World
	inner worlds.World
}

func (w wrapped) Unwrap() worlds.World { return w.inner }

// uncomparable is a World whose type cannot be compared with ==.
type uncomparable struct {
	worlds.World
	_ []int
}

func TestSameWorldUnwraps(t *testing.T) {
	t.Parallel()
	a, b := &struct{ worlds.World }{}, &struct{ worlds.World }{}
	cases := []struct {
		name string
		x, y worlds.World
		want bool
	}{
		{"itself", a, a, true},
		{"another", a, b, false},
		{"wrapper of it", wrapped{inner: a}, a, true},
		{"it and its wrapper", a, wrapped{inner: a}, true},
		{"two wrappers of it", wrapped{inner: wrapped{inner: a}}, wrapped{inner: a}, true},
		{"wrapper of another", wrapped{inner: b}, a, false},
		{"wrapper standing for nothing yet", wrapped{inner: nil}, a, false},
		{"two wrappers standing for nothing", wrapped{inner: nil}, wrapped{inner: nil}, false},
		{"uncomparable", uncomparable{}, uncomparable{}, false},
	}
	for _, tc := range cases {
		if got := sameWorld(tc.x, tc.y); got != tc.want {
			t.Errorf("%s: sameWorld = %v, want %v", tc.name, got, tc.want)
		}
	}
}
