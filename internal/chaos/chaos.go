// Package chaos wraps a World so tests can inject the faults real backends show:
// throttled and timed-out writes, writes that commit but whose response is lost,
// duplicate, early and late deliveries. Every decision comes from one seeded
// random source, so a failing run is reproduced by its seed.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// ErrInjected marks every error the wrapper makes up. It is retryable: the
// runtime must treat it like a throttle or a timeout.
var ErrInjected = errors.New("chaos: injected fault")

// Rates are probabilities in [0, 1] of each fault per call.
type Rates struct {
	// AppendBefore fails an Append before it reaches the World (throttling, a
	// connection reset before the request was sent).
	AppendBefore float64
	// AppendLost commits an Append and then reports failure (the response was lost).
	AppendLost float64
	// QueueBefore fails a Queue call before it reaches the World.
	QueueBefore float64
	// Duplicate runs a delivery twice (SQS at-least-once delivery).
	Duplicate float64
	// Late delays a delivery by up to LateBy (a Scheduler or queue that fires late).
	Late   float64
	LateBy time.Duration
	// Early queues deliveries due in the future at once (early arrival).
	Early float64
}

// Validate rejects probabilities outside [0, 1].
func (r Rates) Validate() error {
	for name, p := range map[string]float64{
		"AppendBefore": r.AppendBefore, "AppendLost": r.AppendLost, "QueueBefore": r.QueueBefore,
		"Duplicate": r.Duplicate, "Late": r.Late, "Early": r.Early,
	} {
		if p < 0 || p > 1 {
			return fmt.Errorf("chaos: Rates.%s = %v: must be within [0, 1]", name, p)
		}
	}
	if r.Late > 0 && r.LateBy <= 0 {
		return fmt.Errorf("chaos: Rates.LateBy = %v: must be positive when Late is set", r.LateBy)
	}
	return nil
}

// Counts reports how many faults of each kind were injected.
type Counts struct {
	AppendBefore, AppendLost, QueueBefore, Duplicate, Late, Early int64
}

// Total sums the counts.
func (c Counts) Total() int64 {
	return c.AppendBefore + c.AppendLost + c.QueueBefore + c.Duplicate + c.Late + c.Early
}

// World is a worlds.World (and worlds.Server and worlds.DeliveryCanceller, when
// the wrapped World is one) that injects faults at the configured rates.
type World struct {
	worlds.World
	rates Rates

	mu  sync.Mutex
	rng *rand.Rand

	appendBefore, appendLost, queueBefore, duplicate, late, early atomic.Int64
	enabled                                                       atomic.Bool
}

// Wrap returns w with faults injected at rates, drawn from a PCG source seeded
// with seed. Faults start enabled; [World.Disable] stops them.
func Wrap(w worlds.World, rates Rates, seed uint64) (*World, error) {
	if w == nil {
		return nil, errors.New("chaos: nil World")
	}
	if err := rates.Validate(); err != nil {
		return nil, err
	}
	c := &World{World: w, rates: rates, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	c.enabled.Store(true)
	return c, nil
}

// Disable stops injecting faults, so a test can let the system settle.
func (c *World) Disable() { c.enabled.Store(false) }

// Counts returns the faults injected so far.
func (c *World) Counts() Counts {
	return Counts{
		AppendBefore: c.appendBefore.Load(), AppendLost: c.appendLost.Load(), QueueBefore: c.queueBefore.Load(),
		Duplicate: c.duplicate.Load(), Late: c.late.Load(), Early: c.early.Load(),
	}
}

func (c *World) roll(p float64) bool {
	if p <= 0 || !c.enabled.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64() < p
}

func (c *World) jitter(max time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.rng.Int64N(int64(max))) + 1
}

// Append injects AppendBefore and AppendLost faults.
func (c *World) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	if c.roll(c.rates.AppendBefore) {
		c.appendBefore.Add(1)
		return nil, fmt.Errorf("%w: append to %s throttled", ErrInjected, runID)
	}
	out, err := c.World.Append(ctx, runID, events...)
	if err == nil && c.roll(c.rates.AppendLost) {
		c.appendLost.Add(1)
		return nil, fmt.Errorf("%w: append to %s committed but its response was lost", ErrInjected, runID)
	}
	return out, err
}

// Queue injects QueueBefore, Early and Late faults.
func (c *World) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	if c.roll(c.rates.QueueBefore) {
		c.queueBefore.Add(1)
		return "", fmt.Errorf("%w: queue %s throttled", ErrInjected, in.RunID)
	}
	if !opts.DueAt.IsZero() && c.roll(c.rates.Early) {
		c.early.Add(1)
		opts.DueAt = time.Time{}
	} else if c.roll(c.rates.Late) {
		c.late.Add(1)
		if opts.DueAt.IsZero() {
			opts.DueAt = time.Now()
		}
		opts.DueAt = opts.DueAt.Add(c.jitter(c.rates.LateBy))
	}
	return c.World.Queue(ctx, in, opts)
}

// CancelDelivery forwards to the wrapped World when it is a
// [worlds.DeliveryCanceller], and otherwise does nothing: cancelling is best
// effort, and a wake-up left queued finds nothing to do when it arrives.
func (c *World) CancelDelivery(ctx context.Context, id string) error {
	if dc, ok := c.World.(worlds.DeliveryCanceller); ok {
		return dc.CancelDelivery(ctx, id)
	}
	return nil
}

// Serve runs the wrapped World's Serve, handing runner this World (so the
// runtime's writes go through the faults) and running some deliveries twice.
func (c *World) Serve(ctx context.Context, runner worlds.Runner) error {
	srv, ok := c.World.(worlds.Server)
	if !ok {
		return fmt.Errorf("chaos: %T does not implement worlds.Server", c.World)
	}
	return srv.Serve(ctx, &dupRunner{c: c, inner: runner})
}

type dupRunner struct {
	c     *World
	inner worlds.Runner
}

func (r *dupRunner) Workflows() []string { return r.inner.Workflows() }

func (r *dupRunner) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	if r.c.roll(r.c.rates.Duplicate) {
		r.c.duplicate.Add(1)
		// The duplicate races the original, as two SQS receivers would. Each copy
		// is its own message: if either fails, that copy is received again, so the
		// delivery is retried when either returns an error.
		var dupErr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			dupErr = r.inner.Run(ctx, r.c, d)
		}()
		err := r.inner.Run(ctx, r.c, d)
		wg.Wait()
		return errors.Join(err, dupErr)
	}
	return r.inner.Run(ctx, r.c, d)
}
