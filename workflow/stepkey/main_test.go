package stepkey_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests serve Worlds on goroutines; every one must be gone when they end.
// Idle keep-alive connections of the DynamoDB client's pooled HTTP transport are
// the SDK's, not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}
