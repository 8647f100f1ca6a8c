package durable_test

import (
	"testing"

	"github.com/cairn-go/cairn/durable"

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

// itemAt returns the item of branch i, with Status "" when that branch never
// started and so has no item.
func itemAt[T any](res durable.BatchResult[T], i int) durable.BatchItem[T] {
	it, _ := res.Item(i)
	return it
}

// envelopeSerdes is the opt-in serdes that writes checkpoint envelopes.
func envelopeSerdes(t testing.TB) durable.Serdes {
	t.Helper()
	s, err := durable.NewEnvelopeSerdes(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
