package local

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// A process that claims a delivery and dies never finishes nor renews it: after
// the lease another process receives it, as a redelivery.
func TestCrashedClaimReturnsAfterLease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lease.db")
	crashed, err := Open(ctx, Config{Path: path, Lease: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}
	if _, err := crashed.Queue(ctx, in, worlds.QueueOptions{ID: "d"}); err != nil {
		t.Fatal(err)
	}
	// The lease runs from a clock reading taken inside claim, so the earliest
	// legitimate redelivery is measured from just before the call.
	claimedAt := time.Now()
	d, _, err := crashed.claim(ctx)
	if err != nil || d == nil || d.Attempt != 1 {
		t.Fatalf("claim = %+v, %v", d, err)
	}

	other, err := Open(ctx, Config{Path: path, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got := make(chan worlds.Delivery, 1)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- other.Serve(sctx, runner(func(d worlds.Delivery) error { got <- d; return nil }))
	}()
	defer func() { cancel(); <-done }()
	select {
	case d := <-got:
		if d.Attempt != 2 || d.ID != "d" {
			t.Errorf("redelivery %+v, want attempt 2", d)
		}
		if time.Since(claimedAt) < 200*time.Millisecond {
			t.Errorf("delivered %s after the claim, before its lease ended", time.Since(claimedAt))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("crashed claim never returned")
	}
	// The dead process's late outcome changes nothing: the claim is no longer its own.
	if err := crashed.finish(ctx, d, nil, false); err != nil {
		t.Fatal(err)
	}
}

// A delivery queued again with its ID while it runs runs once more afterwards, at
// the new due time, so a wake-up racing with its own delivery is not lost.
func TestQueueWhileRunningRunsAgain(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, Config{Path: Memory, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}
	if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: "d"}); err != nil {
		t.Fatal(err)
	}
	runs := make(chan int, 10)
	n := 0
	var again time.Time
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- w.Serve(sctx, runner(func(d worlds.Delivery) error {
			n++
			if n == 1 {
				again = time.Now().Add(200 * time.Millisecond)
				if _, err := w.Queue(ctx, in, worlds.QueueOptions{ID: "d", DueAt: again}); err != nil {
					t.Error(err)
				}
			}
			if n == 2 && time.Now().Before(again) {
				t.Errorf("queued again for %v, ran at %v", again, time.Now())
			}
			runs <- n
			return nil
		}))
	}()
	defer func() { cancel(); <-done }()
	for want := 1; want <= 2; want++ {
		select {
		case got := <-runs:
			if got != want {
				t.Fatalf("run %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d never came", want)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if left, _ := w.pendingDeliveries(ctx); left != 0 || len(runs) != 0 {
		t.Errorf("%d deliveries left, %d extra runs", left, len(runs))
	}
}

func TestBackoff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 11: 15 * time.Minute, 40: 15 * time.Minute} {
		if got := backoff(attempt); got != want {
			t.Errorf("backoff(%d) = %s, want %s", attempt, got, want)
		}
	}
}

type runner func(d worlds.Delivery) error

func (r runner) Workflows() []string { return []string{"wf"} }
func (r runner) Run(_ context.Context, _ worlds.World, d worlds.Delivery) error {
	return r(d)
}

// fakeWall is a wall clock for leases that moves only when told to.
type fakeWall struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeWall) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeWall) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A delivery running for several leases keeps renewing its lease, so another
// worker on the same file never receives it meanwhile. The lease clock is
// driven by the runner: it moves half a lease on only after the heartbeat has
// renewed the lease at the current time, so a slow machine delays the test
// instead of failing it, and without renewal the lease runs out at once.
func TestLongDeliveryRenewsLease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "renew.db")
	const lease = 90 * time.Millisecond
	wall := &fakeWall{t: time.Unix(1_700_000_000, 0)}
	cfg := Config{Path: path, Lease: lease, PollInterval: 10 * time.Millisecond, wall: wall.Now}
	a, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}, worlds.QueueOptions{ID: "slow"}); err != nil {
		t.Fatal(err)
	}
	leaseUntil := func() int64 {
		var l int64
		if err := a.db.QueryRowContext(ctx, `SELECT lease_until FROM deliveries WHERE id = 'slow'`).Scan(&l); err != nil {
			t.Error(err)
		}
		return l
	}
	received := make(chan string, 10)
	finished := make(chan struct{})
	slow := runner(func(d worlds.Delivery) error {
		received <- d.ID
		defer close(finished)
		for i := range 6 { // three leases in all
			want := wall.Now().Add(lease).UnixNano()
			for deadline := time.Now().Add(10 * time.Second); leaseUntil() < want; {
				if time.Now().After(deadline) {
					t.Errorf("step %d: lease not renewed: lease_until %d, want %d", i, leaseUntil(), want)
					return nil
				}
				time.Sleep(5 * time.Millisecond)
			}
			wall.Advance(lease / 2)
		}
		return nil
	})
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 2)
	go func() { done <- a.Serve(sctx, slow) }()
	go func() { done <- b.Serve(sctx, slow) }()
	<-received
	<-finished
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if left, _ := a.pendingDeliveries(ctx); left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery was not recorded done")
		}
	}
	cancel()
	<-done
	<-done
	if n := len(received); n != 0 {
		t.Errorf("a delivery still running was received %d more times", n)
	}
}

// A runner that panics fails the delivery, which is retried; Serve survives.
func TestRunnerPanicIsAFailure(t *testing.T) {
	ctx := context.Background()
	w, err := Open(ctx, Config{Path: Memory, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}, worlds.QueueOptions{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	attempts := make(chan int, 10)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- w.Serve(sctx, runner(func(d worlds.Delivery) error {
			attempts <- d.Attempt
			if d.Attempt == 1 {
				panic("boom")
			}
			return nil
		}))
	}()
	defer func() { cancel(); <-done }()
	for want := 1; want <= 2; want++ {
		select {
		case got := <-attempts:
			if got != want {
				t.Fatalf("attempt %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("attempt %d never came", want)
		}
	}
}
