package worldtest_test

import (
	"testing"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
	"github.com/cairn-go/cairn/worlds/worldtest"
)

// A World proves itself with one line in its own tests.
func ExampleRun() {
	_ = func(t *testing.T) { // func TestWorld(t *testing.T)
		worldtest.Run(t, func(t *testing.T) worlds.World {
			w, err := local.Open(t.Context(), local.Config{Path: local.Memory})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return w
		})
	}
}
