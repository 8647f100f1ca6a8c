package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// errStartQueued refuses an eager start whose delivery ID is taken by a row
// left behind: the start then goes the usual way, which merges the two.
var errStartQueued = errors.New("local: the run's start delivery is queued already")

// serving is one running Serve, as an eager start finds it.
type serving struct {
	ctx    context.Context
	runner worlds.Runner
	slots  chan struct{} // Serve's workers: an eager start takes a free one
	wg     *sync.WaitGroup
	names  []string // the workflows runner runs
}

func (w *World) addServing(sv *serving) {
	w.servingMu.Lock()
	w.servings = append(w.servings, sv)
	w.servingMu.Unlock()
}

// removeServing stops eager starts on sv; those already running are in sv.wg.
func (w *World) removeServing(sv *serving) {
	w.servingMu.Lock()
	w.servings = slices.DeleteFunc(w.servings, func(s *serving) bool { return s == sv })
	w.servingMu.Unlock()
}

// Serving reports how many [World.Serve] calls are running in this process:
// a health check can report it, and a program or test that starts Serve in a
// goroutine can wait for it before starting runs it wants started eagerly.
func (w *World) Serving() int {
	w.servingMu.Lock()
	defer w.servingMu.Unlock()
	return len(w.servings)
}

// takeWorker returns a Serve that runs workflow with one of its workers
// taken and its WaitGroup counting the delivery, or nil.
func (w *World) takeWorker(workflow string) *serving {
	if w.cfg.NoEagerStart {
		return nil
	}
	w.servingMu.Lock()
	defer w.servingMu.Unlock()
	for _, sv := range w.servings {
		if sv.ctx.Err() != nil || !slices.Contains(sv.names, workflow) {
			continue
		}
		select {
		case sv.slots <- struct{}{}:
			sv.wg.Add(1)
			return sv
		default:
		}
	}
	return nil
}

// StartEager implements [worlds.EagerStarter]. The first delivery runs on a
// free worker of a Serve whose runner has the workflow, under that Serve's
// context, and counts against its Config.Workers; it is written claimed, with
// the run's creation, so no other worker takes it while it runs, and it is
// renewed and finished as any claimed delivery is.
func (w *World) StartEager(ctx context.Context, in worlds.QueueInput, created worlds.Event) (bool, error) {
	if err := in.Validate(); err != nil {
		return false, err
	}
	switch {
	case in.Kind != worlds.DeliverWorkflow:
		return false, &worlds.ArgumentError{Field: "QueueInput.Kind", Value: in.Kind, Reason: "a run's first delivery is a workflow delivery"}
	case created.Type != worlds.EventRunCreated:
		return false, &worlds.ArgumentError{Field: "Event.Type", Value: created.Type, Reason: "an eager start appends run_created"}
	case created.WorkflowName != in.WorkflowName:
		return false, &worlds.ArgumentError{Field: "QueueInput.WorkflowName", Value: in.WorkflowName, Reason: fmt.Sprintf("the run is created for workflow %q", created.WorkflowName)}
	}
	runID := in.RunID
	at := w.now()
	created.RunID = runID
	eff, err := worlds.Transition(worlds.State{}, created, at)
	if err != nil {
		return false, nil // the usual start refuses the event with its own error
	}
	sv := w.takeWorker(created.WorkflowName)
	if sv == nil {
		return false, nil
	}
	d := &claimed{Delivery: worlds.Delivery{ID: worlds.StartDeliveryID(runID), Input: in, DueAt: at, Attempt: 1}, claim: w.cfg.NewID()}
	ew := &eagerWorld{deliveryWorld: &deliveryWorld{World: w, runID: runID, release: sync.OnceFunc(func() { <-sv.slots })},
		settled: make(chan struct{}), unwritten: &unwrittenRun{created: created, run: eff.Run, first: eff.Event, start: &eagerStart{d: d, at: at}}}
	go func() {
		defer sv.wg.Done()
		w.deliver(sv.ctx, sv.runner, d, ew, ew.release)
		ew.end()
	}()
	select {
	case <-ew.settled:
		return ew.isCreated(), nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// eagerStart is the claimed delivery an eager start writes with its run's
// creation, at the time the delivery's history already gives the creation.
type eagerStart struct {
	d  *claimed
	at time.Time
}

// claimTx writes an eager start's delivery as claim does when it takes one.
func (w *World) claimTx(ctx context.Context, tx *wtx, s *eagerStart) error {
	body, err := worlds.MarshalQueueInput(s.d.Input)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO deliveries (id, input, due_at, attempt, lease_until, claim)
		VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING`,
		s.d.ID, body, nanos(s.at), w.cfg.wall().UnixNano()+int64(w.cfg.Lease), s.d.claim)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errStartQueued
	}
	return nil
}

// eagerWorld is the World an eager start's delivery runs against. Until the
// run is written it answers reads of the run from its creation event alone,
// and the delivery's first write of the run writes the creation and the
// claimed delivery with it; from then on it is the [deliveryWorld] any
// delivery runs against.
type eagerWorld struct {
	*deliveryWorld

	mu         sync.Mutex
	state      eagerState
	unwritten  *unwrittenRun // while eagerPending; dropped after, so a cached execution does not keep it
	settled    chan struct{} // closed when state leaves eagerPending
	settleOnce sync.Once
}

// unwrittenRun is what an eager start's World knows of its run until the run
// is written.
type unwrittenRun struct {
	created worlds.Event // as the caller gave it
	run     worlds.Run   // the run view right after creation
	first   worlds.Event // created as stored
	start   *eagerStart
}

type eagerState int

const (
	eagerPending eagerState = iota // the run is not written yet
	eagerCreated                   // written: everything goes to the World
	eagerFailed                    // the creation was refused: the delivery only ends
)

// errEagerAbandoned ends an eager delivery whose run was not created by it.
var errEagerAbandoned = errors.New("local: eager start abandoned: the run was not created by it")

// settle lets StartEager return; ew.mu is held.
func (ew *eagerWorld) settle() { ew.settleOnce.Do(func() { close(ew.settled) }) }

// end is called when the delivery has returned: a run it never wrote is
// left to the usual start.
func (ew *eagerWorld) end() {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if ew.state == eagerPending {
		ew.state, ew.unwritten = eagerFailed, nil
	}
	ew.settle()
}

func (ew *eagerWorld) isCreated() bool {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.state == eagerCreated
}

// Unwrap returns the World once the run is written, so the workflow runtime's
// run cache treats an execution cached by the eager delivery as the World's;
// before that, nil.
func (ew *eagerWorld) Unwrap() worlds.World {
	if ew.isCreated() {
		return ew.World
	}
	return nil
}

// pending reports, with ew.mu held, whether calls about runID must wait for
// or make the creation; an abandoned start fails them.
func (ew *eagerWorld) pending(runID string) (bool, error) {
	if runID != ew.runID {
		return false, nil
	}
	switch ew.state {
	case eagerPending:
		return true, nil
	case eagerFailed:
		return false, errEagerAbandoned
	}
	return false, nil
}

// peek returns, for a read about runID, the unwritten run while it is not
// written (nil after, and for other runs), or the error an abandoned start
// gives.
func (ew *eagerWorld) peek(runID string) (*unwrittenRun, error) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	p, err := ew.pending(runID)
	if !p {
		return nil, err
	}
	return ew.unwritten, nil
}

// create writes the run's creation, events after it, q if not nil and the
// claimed delivery in one transaction; ew.mu is held. It returns the stored
// events after the creation.
func (ew *eagerWorld) create(ctx context.Context, events []worlds.Event, q *queued) ([]worlds.Event, error) {
	u := ew.unwritten
	all := append([]worlds.Event{u.created}, events...)
	out, err := ew.World.appendAndQueue(ctx, ew.runID, all, with{q: q, start: u.start, ended: ew.release})
	ew.unwritten = nil
	if err != nil {
		ew.state = eagerFailed
		ew.settle()
		return nil, err
	}
	ew.state = eagerCreated
	ew.settle()
	if q != nil {
		ew.World.signal()
	}
	return out[1:], nil
}

// materialize writes the creation alone, before a call that needs the run
// stored; ew.mu is held.
func (ew *eagerWorld) materialize(ctx context.Context, runID string) error {
	p, err := ew.pending(runID)
	if err != nil || !p {
		return err
	}
	_, err = ew.create(ctx, nil, nil)
	return err
}

// Append implements [worlds.World].
func (ew *eagerWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	ew.mu.Lock()
	p, err := ew.pending(runID)
	if p {
		defer ew.mu.Unlock()
		return ew.create(ctx, events, nil)
	}
	ew.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ew.deliveryWorld.Append(ctx, runID, events...)
}

// AppendAndQueue implements [worlds.AppendQueuer].
func (ew *eagerWorld) AppendAndQueue(ctx context.Context, runID string, events []worlds.Event, in worlds.QueueInput, opts worlds.QueueOptions) ([]worlds.Event, error) {
	ew.mu.Lock()
	p, err := ew.pending(runID)
	if p {
		defer ew.mu.Unlock()
		q, err := ew.World.prepareQueue(in, opts)
		if err != nil {
			return nil, err
		}
		return ew.create(ctx, events, &q)
	}
	ew.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ew.World.AppendAndQueue(ctx, runID, events, in, opts)
}

// GetRun implements [worlds.World].
func (ew *eagerWorld) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	u, err := ew.peek(runID)
	if u != nil {
		run := u.run
		run.Attributes = maps.Clone(run.Attributes)
		return run, nil
	}
	if err != nil {
		return worlds.Run{}, err
	}
	return ew.World.GetRun(ctx, runID)
}

// ListEvents implements [worlds.World].
func (ew *eagerWorld) ListEvents(ctx context.Context, runID string, filter worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	u, err := ew.peek(runID)
	if u != nil {
		var page worlds.Page[worlds.Event]
		if filter.AfterSeq < u.first.Seq && filter.Cursor == "" {
			ev := u.first
			ev.Attributes = maps.Clone(ev.Attributes)
			page.Items = []worlds.Event{ev}
		}
		return page, nil
	}
	if err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	return ew.World.ListEvents(ctx, runID, filter)
}

// Queue implements [worlds.World]: a delivery of the run needs the run stored.
func (ew *eagerWorld) Queue(ctx context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	if err := ew.locked(ctx, in.RunID); err != nil {
		return "", err
	}
	return ew.World.Queue(ctx, in, opts)
}

// WriteStream implements [worlds.World].
func (ew *eagerWorld) WriteStream(ctx context.Context, runID, name string, chunks ...[]byte) (int, error) {
	if err := ew.locked(ctx, runID); err != nil {
		return 0, err
	}
	return ew.World.WriteStream(ctx, runID, name, chunks...)
}

// CloseStream implements [worlds.World].
func (ew *eagerWorld) CloseStream(ctx context.Context, runID, name string) error {
	if err := ew.locked(ctx, runID); err != nil {
		return err
	}
	return ew.World.CloseStream(ctx, runID, name)
}

func (ew *eagerWorld) locked(ctx context.Context, runID string) error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.materialize(ctx, runID)
}
