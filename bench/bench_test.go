package bench

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSmoke keeps CI fast: a few hundred messages through each mode.
func TestSmoke(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		calls, err := runCairn(500, fifo)
		if err != nil {
			t.Fatal(err)
		}
		if per := float64(calls) / 500; per > 0.25 {
			t.Fatalf("fifo=%v: %.3f calls/message", fifo, per)
		}
	}
}

func benchmarkCairn(b *testing.B, fifo bool) {
	b.ReportAllocs()
	calls, err := runCairn(b.N, fifo)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
}

func BenchmarkMessagingStandard_Cairn(b *testing.B) { benchmarkCairn(b, false) }
func BenchmarkMessagingFIFO_Cairn(b *testing.B)     { benchmarkCairn(b, true) }

// The loafer-awsx and loafer-go sides are blocked: the Go module proxy does
// not serve either module (403), see doc.go.
