package workflowotel_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests serve Worlds on goroutines; every one must be gone when they end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
