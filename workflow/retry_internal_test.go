package workflow

import (
	"testing"
	"time"
)

// Jitter shortens each delay by at most RetryJitter, by an amount fixed per
// run, step and attempt, and NoJitter turns it off.
func TestRetryJitter(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{InitialInterval: time.Second, MaxInterval: time.Hour}
	seen := map[time.Duration]bool{}
	for i := range 50 {
		step := "step_" + string(rune('a'+i%26))
		for attempt := 1; attempt <= 3; attempt++ {
			d, nominal := p.delay("run", step, attempt), p.Backoff(attempt)
			if d > nominal || float64(d) < float64(nominal)*(1-RetryJitter) {
				t.Fatalf("delay(%s, %d) = %s, want within %.0f%% below %s", step, attempt, d, RetryJitter*100, nominal)
			}
			if again := p.delay("run", step, attempt); again != d {
				t.Fatalf("delay is not stable: %s then %s", d, again)
			}
			seen[d] = true
		}
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct delays over 78 step attempts: jitter does not spread retries", len(seen))
	}
	p.NoJitter = true
	if d := p.delay("run", "step_1", 2); d != 2*time.Second {
		t.Fatalf("NoJitter delay = %s, want 2s", d)
	}
}
