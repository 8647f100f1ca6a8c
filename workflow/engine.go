package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// flow is a registered workflow with its types erased, as the runtime drives it.
type flow interface {
	name() string
	invoke(ctx Context, input json.RawMessage) (json.RawMessage, error)
	// inputType is the workflow's input type, to check a continue-as-new input.
	inputType() reflect.Type
}

type execMode int

const (
	// modeAdvance runs the workflow to its next suspension point or its end.
	modeAdvance execMode = iota
	// modeCapture replays until the workflow calls the target step, to get its function.
	modeCapture
	// modeQuery replays to the run's current position and parks there, writing
	// nothing, so a query handler can read the code's state (see [Query]).
	modeQuery
)

type outcomeKind int

const (
	outReturned  outcomeKind = iota // the workflow function returned
	outSuspended                    // an operation is unresolved
	outCaptured                     // capture mode found its step
	outDiverged                     // nondeterminism
	outPanicked                     // workflow code panicked
	outExited                       // the goroutine ended some other way (runtime.Goexit in user code)
	outNeedClock                    // the code asked for the time of a step outcome not yet stored
	outHung                         // the delivery gave up waiting for the goroutine (see execution.hung)
)

// stepCall runs one attempt of a step on its recorded JSON input.
type stepCall func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// captured is the step a capture-mode execution found.
type captured struct {
	name string
	call stepCall
	opts stepOptions
}

// pendingOp is an operation the code reached that the log does not have yet.
type pendingOp struct {
	kind  opKind
	event worlds.Event
	step  *captured // for a step: what running it inline needs
}

// execution is one execution of a workflow function against its history. It runs
// on its own goroutine, which parks when the code reaches an operation the log has
// not resolved; the delivery then appends what the code reached and either ends
// the goroutine (abort) or keeps it in the run cache, to be resumed by a later
// delivery after the events appended since are applied to its history. The
// workflow goroutine and the delivery goroutine take turns: all fields except
// replaying, closed and dctx are touched by one of them at a time, handed over
// through parked and resume.
type execution struct {
	rt     *engine
	world  worlds.World
	flow   flow // the workflow it runs, set by its invoke
	hist   *history
	runID  string
	wfName string
	mode   execMode
	target string

	pos     int
	pending []pendingOp
	// marks are events that record what the code chose (a [Version], a timer's
	// cancellation) rather than operations; they go last in the next write.
	marks []worlds.Event
	// upsertPos and upsertN number the UpsertAttributes calls: the position
	// of the operation the latest call followed, and the calls since it.
	upsertPos, upsertN int
	// queries are the query handlers the code set, by name ([SetQueryHandler]).
	queries map[string]queryFunc
	// fns are the functions of the steps the execution's deliveries queued, for
	// their step deliveries while it is cached.
	fns map[string]*captured
	// signalNext is, by signal name, how many of its signals the code has read.
	signalNext map[string]int
	consumed   int64
	now        time.Time
	rng        *rand.Rand
	// stored is the Seq of the newest event known to be in the log; history past it
	// is a step outcome still to be appended (tentative), whose time the code must
	// not observe before it is stored.
	stored int64
	// stopping is set once the execution decided to end; operations called after
	// it (from user defers) end the goroutine again.
	stopping bool
	// cancelSeen: an operation returned the run's cancellation to the code, so
	// operations it starts afterwards (without WithoutCancel) do not run.
	cancelSeen bool
	// policy is what a failure of the workflow code does to the run.
	policy CodeErrorPolicy

	replaying atomic.Bool
	closed    atomic.Bool
	dctx      atomic.Pointer[context.Context]
	parked    chan struct{}
	resume    chan bool
	done      chan struct{}
	// goid is the workflow goroutine's ID, set before the workflow code starts:
	// operations called from any other goroutine fail (ownerCheck).
	goid uint64
	// abandon is closed when the delivery gives up on the workflow goroutine
	// (giveUp); hung, owned by the delivery goroutine, says why. The workflow
	// goroutine then ends at its next operation or park, and the delivery reads
	// none of the fields it writes.
	abandon chan struct{}
	hung    error

	kind     outcomeKind
	output   json.RawMessage
	err      error
	capture  *captured
	panicVal any
	stack    []byte
}

func newExecution(rt *engine, w worlds.World, hist *history, mode execMode, target string) *execution {
	seed := sha256.Sum256([]byte(randomSeed(hist.run)))
	e := &execution{
		rt: rt, world: w, hist: hist, runID: hist.run.RunID, wfName: hist.run.WorkflowName,
		mode: mode, target: target, stored: hist.seq,
		parked: make(chan struct{}), resume: make(chan bool), done: make(chan struct{}), abandon: make(chan struct{}),
		rng: rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:16]))),
	}
	if hist.started != nil {
		e.consumed, e.now = hist.started.Seq, hist.started.CreatedAt
	} else {
		e.now = hist.run.CreatedAt
	}
	e.replaying.Store(mode != modeAdvance || e.consumed < hist.newest)
	return e
}

// info implements infoSource for the workflow context.
func (e *execution) info() Info {
	return Info{RunID: e.runID, WorkflowName: e.wfName, Replaying: e.replaying.Load()}
}

func (e *execution) deliveryCtx() context.Context { return *e.dctx.Load() }

// setDeliveryCtx makes ctx's values (not its cancellation) the workflow context's.
func (e *execution) setDeliveryCtx(ctx context.Context) {
	c := context.WithoutCancel(ctx)
	e.dctx.Store(&c)
}

// run executes f in its own goroutine and waits for it to return, end or park
// (at most for the deadlock timeout; see waitTurn).
func (e *execution) run(ctx context.Context, f flow) {
	e.setDeliveryCtx(ctx)
	e.policy = e.rt.policyOf(f)
	wctx := &wfContext{exec: e}
	started := make(chan struct{})
	go func() {
		e.goid = goroutineID()
		close(started)
		returned := false
		defer func() {
			if !returned {
				if r := recover(); r != nil {
					e.kind, e.panicVal, e.stack = outPanicked, r, debug.Stack()
				} else if !e.stopping {
					e.kind = outExited
				}
			}
			e.closed.Store(true)
			close(e.done)
		}()
		out, err := f.invoke(wctx, e.hist.run.Input)
		returned = true
		e.kind, e.output, e.err = outReturned, out, err
		if e.mode == modeCapture {
			e.kind, e.err = outDiverged, &NondeterminismError{RunID: e.runID, Position: e.pos + 1,
				Expected: "step " + e.target, Actual: "return before reaching it"}
			return
		}
		if e.hist.maxPos > e.pos && !errors.Is(err, ErrUnsupportedVersion) {
			// (A run on a branch the code no longer has fails with the VersionError
			// that says so, not with the divergence that follows from it.)
			next := e.pos + 1
			for e.hist.byPos[next] == nil {
				next++
			}
			e.kind, e.err = outDiverged, &NondeterminismError{RunID: e.runID, Position: next,
				Expected: e.hist.byPos[next].describe(), Actual: "return"}
		}
	}()
	<-started
	e.waitTurn(ctx)
}

// isParked reports whether the workflow goroutine is parked, waiting to be
// resumed or aborted. Only the delivery goroutine calls it, between turns.
func (e *execution) isParked() bool {
	if e.hung != nil {
		return false
	}
	select {
	case <-e.done:
		return false
	default:
		return e.kind == outSuspended || e.kind == outNeedClock
	}
}

// proceed resumes the parked workflow goroutine (its history already holds what
// it waited for) and waits for it to park or end again.
func (e *execution) proceed(ctx context.Context) {
	e.pending = nil
	e.setDeliveryCtx(ctx)
	e.resume <- true
	e.waitTurn(ctx)
}

// abort ends a parked workflow goroutine with [runtime.Goexit] (its deferred
// functions run) and waits until it has ended, at most for the deadlock
// timeout: deferred functions that block are the workflow code's, and the
// goroutine is given up on. It does nothing to an execution that already
// ended or was given up on.
func (e *execution) abort() {
	if !e.isParked() {
		return
	}
	e.resume <- false
	t := time.NewTimer(e.turnTimeout())
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
		e.giveUp(&DeadlockError{RunID: e.runID, Timeout: e.turnTimeout(), Stack: goroutineStack(e.goid)})
	}
}

// park hands control to the delivery with outcome kind and waits to be resumed;
// an abort ends the goroutine, and so does a delivery that gave up on it.
func (e *execution) park(kind outcomeKind) {
	e.kind = kind
	select {
	case e.parked <- struct{}{}:
	case <-e.abandon:
		e.stopping = true
		runtime.Goexit()
	}
	if !<-e.resume {
		e.stopping = true
		runtime.Goexit()
	}
}

// stop ends the workflow goroutine with the given outcome. It never returns.
func (e *execution) stop(kind outcomeKind, err error) {
	if !e.stopping {
		e.stopping, e.kind, e.err = true, kind, err
	}
	runtime.Goexit()
}

// enter is called first by every operation. An operation of an execution its
// delivery gave up on ends the goroutine: nothing will read what it does.
func (e *execution) enter() {
	if e.stopping {
		runtime.Goexit()
	}
	select {
	case <-e.abandon:
		e.stopping = true
		runtime.Goexit()
	default:
	}
}

// next advances the position counter and checks the log's operation there.
func (e *execution) next(kind opKind, name string) (int, *record) {
	e.enter()
	e.pos++
	r := e.hist.byPos[e.pos]
	if r == nil {
		if e.mode == modeCapture {
			// Capture replays only history; an operation the log lacks means the target
			// was not reached where it should have been.
			e.stack = debug.Stack()
			e.stop(outDiverged, &NondeterminismError{RunID: e.runID, Position: e.pos,
				Expected: "nothing", Actual: actualOf(kind, name)})
		}
		return e.pos, nil
	}
	if r.kind != kind || (kind == opStep && r.created.StepName != name) {
		e.stack = debug.Stack() // where the code diverged, for the run's blocked record
		e.stop(outDiverged, &NondeterminismError{RunID: e.runID, Position: e.pos,
			Expected: r.describe(), Actual: actualOf(kind, name)})
	}
	return e.pos, r
}

func actualOf(kind opKind, name string) string {
	switch kind {
	case opStep:
		return fmt.Sprintf("step %q", name)
	case opWait:
		return "sleep"
	}
	return "hook"
}

// consume marks an event as observed by the code: the replay clock moves to it and
// replay turns live once the newest resolving event has been observed.
func (e *execution) consume(ev *worlds.Event) {
	if ev.Seq > e.consumed {
		e.consumed, e.now = ev.Seq, ev.CreatedAt
	}
	if e.mode == modeAdvance && e.consumed >= e.hist.newest {
		e.replaying.Store(false)
	}
}

// block is called by an operation whose result is not in the log: the code cannot
// go on, so the execution parks until a delivery resumes it with more history (the
// caller then looks again) or aborts it.
func (e *execution) block() {
	if e.mode == modeQuery {
		// The run's current position: the query reads the code's state here,
		// then aborts the execution. Deferred functions of the code must not run
		// before, so it parks rather than stops.
		e.park(outSuspended)
		return
	}
	e.replaying.Store(false)
	if e.mode == modeCapture {
		e.stop(outSuspended, nil)
	}
	e.park(outSuspended)
	e.replaying.Store(false)
}

// Now returns the workflow's clock: the time of the newest event the code has
// observed so far, identical on every replay. Called with a context that is not
// a live workflow's, or from a goroutine that is not the workflow's own, it
// returns the zero time.
func Now(ctx Context) time.Time {
	e, err := execOf(ctx)
	if err != nil {
		return time.Time{}
	}
	e.enter()
	if e.consumed > e.stored {
		// The clock comes from a step outcome still to be appended: have it stored
		// first, so the code sees the time a replay of the log would.
		e.park(outNeedClock)
	}
	return e.now
}

// Random returns a pseudo-random number in [0, 1), the same sequence on every replay
// of a run: seeded by the run ID and advanced in call order. Called with a
// context that is not a live workflow's, or from a goroutine that is not the
// workflow's own, it returns 0 and advances nothing.
func Random(ctx Context) float64 {
	e, err := execOf(ctx)
	if err != nil {
		return 0
	}
	e.enter()
	return e.rng.Float64()
}

// interrupted reports whether a blocking operation called with ctx, resolved by
// ev (nil while unresolved), returns the run's cancellation instead: the run
// was asked to stop and the operation was not resolved before the request in
// the log, so every replay interrupts it at the same point.
func (e *execution) interrupted(ctx Context, ev *worlds.Event) error {
	cs := e.hist.cancelSeq
	if cs == 0 || detached(ctx) || (ev != nil && ev.Seq < cs) {
		return nil
	}
	e.cancelSeen = true
	return &CancelledError{RunID: e.runID, Reason: e.hist.cancelReason}
}

// refused returns the run's cancellation for an operation started with ctx once
// the code has seen it: the operation is not recorded and does not run.
func (e *execution) refused(ctx Context) error {
	if !e.cancelSeen || detached(ctx) {
		return nil
	}
	return &CancelledError{RunID: e.runID, Reason: e.hist.cancelReason}
}
