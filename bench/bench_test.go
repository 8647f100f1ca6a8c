package bench

import (
	"syscall"
	"testing"
	"time"

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
	start := cpuTime()
	calls, err := runCairn(b.N, fifo)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(calls)/float64(b.N), "calls/msg")
	// CPU time (user + system, all threads) per message: steadier than
	// ns/op on a machine shared with other jobs.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/msg")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkMessagingStandard_Cairn(b *testing.B) { benchmarkCairn(b, false) }
func BenchmarkMessagingFIFO_Cairn(b *testing.B)     { benchmarkCairn(b, true) }

// The loafer-awsx and loafer-go sides are blocked: the Go module proxy does
// not serve either module (403), see doc.go.
