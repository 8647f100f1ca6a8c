package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// ThreeSteps is the benchmarked cairn workflow: three trivial steps in sequence.
type ThreeSteps struct{}

func addOne(_ context.Context, n int) (int, error) { return n + 1, nil }

// Run adds one three times, each time in its own durable step.
func (ThreeSteps) Run(ctx workflow.Context, n int) (int, error) {
	for _, name := range [Steps]string{"one", "two", "three"} {
		var err error
		if n, err = workflow.Step(ctx, name, addOne, n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Chain is the long-run cairn workflow: N trivial steps in sequence.
type Chain struct{}

// Run adds one N times, each time in its own durable step.
func (Chain) Run(ctx workflow.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = workflow.Step(ctx, "add", addOne, v); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// Parked runs one step and waits on a hook: a run that stays suspended, for
// measuring the memory of suspended runs in the run cache.
type Parked struct{}

// Run runs a step, then waits for a payload sent to the hook named token.
func (Parked) Run(ctx workflow.Context, token string) (int, error) {
	n, err := workflow.Step(ctx, "one", addOne, 0)
	if err != nil {
		return 0, err
	}
	h, err := workflow.CreateHook[int](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return 0, err
	}
	m, err := h.Receive(ctx)
	return n + m, err
}

// Inbox reads n signals named "msg" and returns their sum: the benchmarked
// receiver of signals.
type Inbox struct{}

// Run receives n signals.
func (Inbox) Run(ctx workflow.Context, n int) (int, error) {
	ch := workflow.NewSignalChannel[int](ctx, "msg")
	sum := 0
	for range n {
		v, err := ch.Receive(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// countingWorld counts the World's write calls (Append and Queue), each one
// SQLite transaction on the embedded World.
type countingWorld struct {
	worlds.World
	srv worlds.Server
	*writeCounts
}

// writeCounts is shared by a countingWorld and the views of it that eager
// starts' deliveries run against.
type writeCounts struct {
	appends atomic.Int64
	queues  atomic.Int64
}

func (c *writeCounts) writes() int64 { return c.appends.Load() + c.queues.Load() }

func (c *countingWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	c.appends.Add(1)
	return c.World.Append(ctx, runID, events...)
}

func (c *countingWorld) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	c.queues.Add(1)
	return c.World.Queue(ctx, in, opts)
}

// AppendAndQueue counts one write: the embedded World appends and queues in
// one SQLite transaction.
func (c *countingWorld) AppendAndQueue(ctx context.Context, runID string, events []worlds.Event, in worlds.QueueInput, opts worlds.QueueOptions) ([]worlds.Event, error) {
	aq, ok := c.World.(worlds.AppendQueuer)
	if !ok {
		return nil, errors.New("bench: the counted World cannot append and queue in one write")
	}
	c.appends.Add(1)
	return aq.AppendAndQueue(ctx, runID, events, in, opts)
}

// StartEager writes nothing itself: the run's creation goes with the first
// append of the delivery it starts, which is counted there.
func (c *countingWorld) StartEager(ctx context.Context, in worlds.QueueInput, created worlds.Event) (bool, error) {
	es, ok := c.World.(worlds.EagerStarter)
	if !ok {
		return false, nil
	}
	return es.StartEager(ctx, in, created)
}

// SubscribeRun lets Run.Result hear of a run's end, as it does on the
// embedded World itself.
func (c *countingWorld) SubscribeRun(runID string) (<-chan struct{}, func()) {
	if n, ok := c.World.(worlds.RunNotifier); ok {
		return n.SubscribeRun(runID)
	}
	return nil, func() {}
}

// Serve hands deliveries to runner with the counting World, so the runtime's
// writes while executing deliveries are counted too.
func (c *countingWorld) Serve(ctx context.Context, runner worlds.Runner) error {
	return c.srv.Serve(ctx, countingRunner{Runner: runner, w: c})
}

type countingRunner struct {
	worlds.Runner
	w *countingWorld
}

// unwrapper is a World standing in for another during one delivery, as the
// embedded World hands its deliveries.
type unwrapper interface{ Unwrap() worlds.World }

func (r countingRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	if u, ok := w.(unwrapper); ok {
		return r.Runner.Run(ctx, deliveryView{countingWorld: &countingWorld{World: w, writeCounts: r.w.writeCounts}, top: r.w, inner: u}, d)
	}
	return r.Runner.Run(ctx, r.w, d)
}

// deliveryView counts the writes of one delivery, and stands in for the
// counting World as the World it wraps stands in for its own.
type deliveryView struct {
	*countingWorld
	top   *countingWorld
	inner unwrapper
}

func (v deliveryView) Unwrap() worlds.World {
	if v.inner.Unwrap() == nil {
		return nil
	}
	return v.top
}

// cairnBench is cairn's embedded World on a SQLite file in dir, served by
// Workers workers.
type cairnBench struct {
	client *workflow.Client
	world  *countingWorld
	stop   func() error
}

func startCairn(dir string) (*cairnBench, error) {
	return startCairnWith(dir, workflow.CacheConfig{})
}

// startCairnWith is startCairn with a run cache configuration.
func startCairnWith(dir string, cache workflow.CacheConfig) (*cairnBench, error) {
	ctx := context.Background()
	lw, err := local.Open(ctx, local.Config{Path: filepath.Join(dir, "cairn.db"), Workers: Workers})
	if err != nil {
		return nil, err
	}
	cw := &countingWorld{World: lw, srv: lw, writeCounts: &writeCounts{}}
	client, err := workflow.NewClient(workflow.Config{World: cw, PollInterval: 10 * time.Millisecond, Cache: cache})
	if err != nil {
		return nil, errors.Join(err, lw.Close())
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- client.Serve(sctx, workflow.Use(ThreeSteps{}), workflow.Use(Chain{}), workflow.Use(Parked{}), workflow.Use(Inbox{}))
	}()
	// Starting the workers is set-up: runs started before Serve runs would be
	// queued rather than started eagerly.
	for lw.Serving() == 0 {
		select {
		case err := <-done:
			cancel()
			return nil, errors.Join(fmt.Errorf("bench: Serve returned at start: %v", err), lw.Close())
		case <-time.After(time.Millisecond):
		}
	}
	stop := func() error {
		cancel()
		err := <-done
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return errors.Join(err, lw.Close())
	}
	return &cairnBench{client: client, world: cw, stop: stop}, nil
}

// run starts n runs on Starters goroutines and awaits each to completion.
func (c *cairnBench) run(ctx context.Context, n int) error {
	return drive(ctx, n, func(ctx context.Context, i int) error {
		r, err := workflow.Start(ctx, c.client, ThreeSteps{}, i)
		if err != nil {
			return err
		}
		out, err := r.Result(ctx)
		if err != nil {
			return err
		}
		if out != i+Steps {
			return fmt.Errorf("cairn run %s: got %d, want %d", r.ID(), out, i+Steps)
		}
		return nil
	})
}

// chain runs one Chain of n steps and awaits it.
func (c *cairnBench) chain(ctx context.Context, n int) error {
	r, err := workflow.Start(ctx, c.client, Chain{}, n)
	if err != nil {
		return err
	}
	out, err := r.Result(ctx)
	if err != nil {
		return err
	}
	if out != n {
		return fmt.Errorf("cairn chain %s: got %d, want %d", r.ID(), out, n)
	}
	return nil
}
