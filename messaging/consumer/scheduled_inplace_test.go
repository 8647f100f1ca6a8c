package consumer_test

import (
	"testing"
	"time"
)

// A message retried in place (standard queue, 10 attributes: no room for
// retry_count) keeps its ID and carries no count, so its receives are its
// retries: once they pass MaxRetryCount it is dead-lettered like any other.
// It used to be retried in place for ever, never reaching the DLQ.
func TestScheduledRetryInPlaceReachesDLQ(t *testing.T) {
	t.Parallel()
	s := startScheduled(t, "inplace-dlq", 2, 1000, func(s *scheduledRun) { s.fake.SetNow(s.clk.Now) })
	if _, err := s.fake.Send(s.url, "m", "", tenAttrs()); err != nil {
		t.Fatal(err)
	}
	// Each in-place retry hides the message for the 1 s backoff; move the
	// clock past it after every handler call until it is dead-lettered or
	// has clearly been retried too often.
	for calls := 1; calls <= 6; calls++ {
		waitFor(t, func() bool { return s.calls() >= calls || s.dead.Load() > 0 })
		if s.dead.Load() > 0 {
			break
		}
		// The backoff must be set before the clock moves past it.
		waitFor(t, func() bool { return s.fake.Calls("ChangeMessageVisibilityBatch") >= calls || s.dead.Load() > 0 })
		s.clk.Advance(2 * time.Second)
	}
	waitFor(t, func() bool { return s.dead.Load() > 0 || s.calls() > 6 })
	s.stop(t)
	// 1 first attempt + 2 retries, then the DLQ.
	if s.dead.Load() != 1 || s.fake.Len(s.dlq) != 1 || s.fake.Len(s.url) != 0 || s.calls() != 3 {
		t.Fatalf("handler calls %d, dead-lettered %d, DLQ %d, queue %d: want 3 calls then one dead letter",
			s.calls(), s.dead.Load(), s.fake.Len(s.dlq), s.fake.Len(s.url))
	}
}
