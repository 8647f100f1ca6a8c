package durable_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Parallel and Map run branches in goroutines; none may outlive its
// invocation. Idle keep-alive connections of the Lambda client to the local
// checkpoint server are not the adapter's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}
