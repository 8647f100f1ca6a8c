package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The dev server, its workers and SSE handlers, and the browser driver must all
// stop with their tests. Idle keep-alive connections of HTTP clients (the AWS
// SDK's included) are pooled, not leaked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}
