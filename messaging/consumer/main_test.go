package consumer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The emulator tests leave the SDK's idle keep-alive connections behind;
// they belong to net/http's pool, not to the consumer.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}
