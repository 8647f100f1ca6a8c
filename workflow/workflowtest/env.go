package workflowtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// defaultStart is where an Env's virtual clock starts unless WithStartTime says
// otherwise: a fixed time, so runs are reproducible.
var defaultStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// MaxDeliveries bounds how many deliveries one call that drives runs
// ([Run.Result], [Env.Settle]) executes, so a workflow that never ends fails its
// test instead of hanging it.
const MaxDeliveries = 10000

// ErrBlocked is returned by [Run.Result] when the run cannot go on by itself: it
// waits for a hook payload (or for a step that cannot finish), and nothing else is
// due at any time.
var ErrBlocked = errors.New("workflowtest: run is blocked with nothing due")

// Option configures an [Env].
type Option func(*options)

type options struct {
	start      time.Time
	queueSteps bool
}

// WithStartTime starts the virtual clock at t instead of 2026-01-01T00:00:00Z.
func WithStartTime(t time.Time) Option { return func(o *options) { o.start = t } }

// WithQueueSteps runs every step attempt in a delivery of its own, as
// [workflow.Config].QueueSteps does, instead of inline where the runtime can.
func WithQueueSteps() Option { return func(o *options) { o.queueSteps = true } }

// Env is an in-memory World with a virtual clock, a [workflow.Client] on it, and
// the step stubs and spies of one test. Drive it from one goroutine (the test's);
// steps run on that goroutine too. Its client runs with the run cache off, so
// every delivery replays the run and nondeterministic code fails in the test.
type Env struct {
	world  *memworld.World
	client *workflow.Client

	start time.Time

	mu      sync.Mutex
	now     time.Time
	ids     int
	stubs   map[string]workflow.StepFunc
	calls   []Call
	runners map[string]worlds.Runner
	// later are the callbacks registered with At, in registration order.
	later []delayed
}

// delayed is a callback of [Env.At].
type delayed struct {
	at time.Time
	f  func()
}

// New returns an empty Env.
func New(opts ...Option) *Env {
	o := options{start: defaultStart}
	for _, opt := range opts {
		opt(&o)
	}
	e := &Env{start: o.start.UTC(), now: o.start.UTC(), stubs: map[string]workflow.StepFunc{}, runners: map[string]worlds.Runner{}}
	e.world = memworld.New(memworld.Clock(e.Now))
	c, err := workflow.NewClient(workflow.Config{
		World: e.world, Clock: e.Now, IDs: (*envIDs)(e), QueueSteps: o.queueSteps,
		StepInterceptor: e.intercept,
		// Every delivery replays the run from its log, so code that is not
		// deterministic fails here, in the test, and no suspended run outlives it.
		Cache: workflow.CacheConfig{Disabled: true},
		// Queries replay runs with the code of the registered workflows.
		Workflows: (*envRunner)(e),
	})
	if err != nil { // cannot happen: the configuration is fixed and valid
		panic(err)
	}
	e.client = c
	return e
}

// Client returns the Env's client, for the workflow package's own functions
// (workflow.Start, workflow.Attach, Client.Cancel). Runs started through it are
// driven by the Env only if their workflow was registered with [Register] or
// [Start].
func (e *Env) Client() *workflow.Client { return e.client }

// World returns the Env's in-memory World, to read runs, steps and events.
func (e *Env) World() worlds.World { return e.world }

// StartTime returns the time the virtual clock started at.
func (e *Env) StartTime() time.Time { return e.start }

// Now returns the virtual time.
func (e *Env) Now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// Advance moves the virtual clock forward by d without running anything; the next
// call that drives runs delivers what became due.
func (e *Env) Advance(d time.Duration) {
	if d > 0 {
		e.mu.Lock()
		e.now = e.now.Add(d)
		e.mu.Unlock()
	}
}

type envIDs Env

// NewID returns run-1, run-2, ...: fixed IDs keep [workflow.Random] and hook IDs
// the same on every test run.
func (g *envIDs) NewID() string {
	e := (*Env)(g)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ids++
	return "run-" + strconv.Itoa(e.ids)
}

// Register makes the Env drive runs of w, however they were started.
func Register[I, O any](e *Env, w workflow.Workflow[I, O]) {
	r := workflow.Use(w)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range r.Workflows() {
		e.runners[name] = r
	}
}

// Start registers w and starts a run of it with input in. It runs nothing yet:
// [Run.Result] and [Env.Settle] drive it.
func Start[I, O any](ctx context.Context, e *Env, w workflow.Workflow[I, O], in I, opts ...workflow.StartOption) (*Run[O], error) {
	Register(e, w)
	r, err := workflow.Start(ctx, e.client, w, in, opts...)
	if err != nil {
		return nil, err
	}
	return &Run[O]{env: e, id: r.ID()}, nil
}

// SignalWithStart registers w and calls [workflow.SignalWithStart]: it starts
// a run of w with input in, unless the run ID given with [workflow.WithRunID]
// exists, and signals the run. It runs nothing yet.
func SignalWithStart[I, O any](ctx context.Context, e *Env, w workflow.Workflow[I, O], in I, name string, payload any, opts ...workflow.StartOption) (*Run[O], error) {
	Register(e, w)
	r, err := workflow.SignalWithStart(ctx, e.client, w, in, name, payload, opts...)
	if err != nil {
		return nil, err
	}
	return &Run[O]{env: e, id: r.ID()}, nil
}

// Stub replaces every step named name, in every run of the Env, by fn. The step's
// recorded input is decoded into I and fn's output encoded as the step's output;
// an error fn returns is the attempt's error (wrap it with [workflow.Fatal] to
// stop retries), and a panic is a retryable *[workflow.PanicError], as for a real
// step. A later Stub of the same name replaces the earlier one.
func Stub[I, O any](e *Env, name string, fn func(ctx context.Context, in I) (O, error)) {
	call := func(ctx context.Context, input json.RawMessage) (_ json.RawMessage, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = &workflow.PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
			}
		}()
		var in I
		if len(input) > 0 {
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, workflow.Fatal(fmt.Errorf("workflowtest: stub of step %q: decoding input %s: %w", name, input, err))
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, workflow.Fatal(fmt.Errorf("workflowtest: stub of step %q: encoding output: %w", name, err))
		}
		return raw, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stubs[name] = call
}

// Call is one attempt of a step, as the step (or its stub) saw it.
type Call struct {
	RunID   string
	StepID  string // "step_2"
	Name    string
	Attempt int // from 1
	Input   json.RawMessage
	Output  json.RawMessage // nil when the attempt failed
	Err     error
	Stubbed bool
}

func (e *Env) intercept(ctx context.Context, info workflow.Info, input json.RawMessage, next workflow.StepFunc) (json.RawMessage, error) {
	e.mu.Lock()
	stub, stubbed := e.stubs[info.StepName]
	e.mu.Unlock()
	if stubbed {
		next = stub
	}
	out, err := next(ctx, input)
	e.mu.Lock()
	e.calls = append(e.calls, Call{RunID: info.RunID, StepID: info.StepID, Name: info.StepName, Attempt: info.Attempt,
		Input: input, Output: out, Err: err, Stubbed: stubbed})
	e.mu.Unlock()
	return out, err
}

// Calls returns the attempts of steps named name in every run of the Env, in the
// order they ran; no name returns every attempt of every step.
func (e *Env) Calls(name string) []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Call
	for _, c := range e.calls {
		if name == "" || c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// ResumeHook sends payload, encoded as JSON, to the hook owning token, as
// [workflow.ResumeHook] does. It runs nothing yet: [Run.Result] and [Env.Settle]
// deliver the payload.
func (e *Env) ResumeHook(ctx context.Context, token string, payload any) error {
	_, err := workflow.ResumeHook(ctx, e.client, token, payload)
	return err
}

// Signal sends the run runID the signal name with payload, encoded as JSON, as
// [workflow.Signal] does. It runs nothing yet: [Run.Result] and [Env.Settle]
// deliver it. With [Env.At] it arrives at a chosen virtual time, for example
// while a timer of the run is still pending.
func (e *Env) Signal(ctx context.Context, runID, name string, payload any) error {
	return workflow.Signal(ctx, e.client, runID, name, payload)
}

// Settle runs every delivery that is due, jumping the virtual clock to the next
// due delivery (or [Env.At] callback) whenever nothing is due now, until nothing
// is queued and no callback is left: every run has ended or waits for a hook.
func (e *Env) Settle(ctx context.Context) error {
	return e.drive(ctx, nil, false)
}

// At registers f to run once when the virtual clock reaches [Env.StartTime]
// plus d, like Temporal's RegisterDelayedCallback: the calls that drive runs
// ([Run.Result], [Env.Settle], [Env.RunDue]) run it between deliveries, on the
// test's goroutine, before any delivery due later. Driving jumps the clock to a
// callback as it does to a due delivery, so f can resume a hook
// ([Env.ResumeHook]) while a timer of the run is still pending, or cancel a run
// part way through a sleep. A time already passed runs f at the next drive.
func (e *Env) At(d time.Duration, f func()) {
	if f == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.later = append(e.later, delayed{at: e.start.Add(d), f: f})
}

// RunDue runs every delivery and [Env.At] callback due at the current virtual
// time, and what they make due at once (a step queued by a delivery, the
// delivery a resumed hook queues), without moving the clock: a step through a
// test in which each call shows the state at one instant. Use [Env.Advance] to
// move time on.
func (e *Env) RunDue(ctx context.Context) error {
	return e.drive(ctx, nil, true)
}

// runCallbacks runs the callbacks due now, earliest first, and reports whether
// it ran any.
func (e *Env) runCallbacks() bool {
	ran := false
	for {
		e.mu.Lock()
		i := -1
		for j, c := range e.later {
			if !c.at.After(e.now) && (i < 0 || c.at.Before(e.later[i].at)) {
				i = j
			}
		}
		if i < 0 {
			e.mu.Unlock()
			return ran
		}
		c := e.later[i]
		e.later = slices.Delete(e.later, i, i+1)
		e.mu.Unlock()
		c.f() // unlocked: f calls back into the Env
		ran = true
	}
}

// nextDue returns the earliest time a queued delivery or a callback is due.
func (e *Env) nextDue() (time.Time, bool) {
	var next time.Time
	ok := false
	consider := func(t time.Time) {
		if !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	for _, d := range e.world.Queued() {
		consider(d.DueAt)
	}
	e.mu.Lock()
	for _, c := range e.later {
		consider(c.at)
	}
	e.mu.Unlock()
	return next, ok
}

// drive runs deliveries until done reports true or the queue is empty.
//
// With nowOnly it never moves the clock: it returns once nothing is due now.
func (e *Env) drive(ctx context.Context, done func() bool, nowOnly bool) error {
	var last []error
	for ran := 0; ran < MaxDeliveries; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if done != nil && done() {
			return nil
		}
		if e.runCallbacks() {
			continue
		}
		n, errs := e.world.RunOne(ctx, (*envRunner)(e))
		if len(errs) > 0 {
			last = errs
		}
		if n > 0 {
			ran += n
			continue
		}
		if nowOnly {
			return nil
		}
		next, ok := e.nextDue()
		if !ok {
			return nil
		}
		e.mu.Lock()
		if next.After(e.now) {
			e.now = next
		}
		e.mu.Unlock()
	}
	return fmt.Errorf("workflowtest: runs did not settle after %d deliveries (last delivery errors: %w)", MaxDeliveries, errors.Join(last...))
}

type envRunner Env

func (r *envRunner) Workflows() []string {
	e := (*Env)(r)
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.runners))
	for n := range e.runners {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *envRunner) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	e := (*Env)(r)
	e.mu.Lock()
	inner := e.runners[d.Input.WorkflowName]
	e.mu.Unlock()
	if inner == nil {
		return fmt.Errorf("%w: %q is not registered with this workflowtest.Env (use workflowtest.Register)", workflow.ErrUnknownWorkflow, d.Input.WorkflowName)
	}
	return e.client.Runner(inner).Run(ctx, w, d)
}

// Query answers a query of a run with the code of its workflow, registered
// with [Register] or [Start]: it replays the run from its log up to where its
// code waits now (the Env's run cache is off), calls the query handler name
// ([workflow.SetQueryHandler]) with arg, and decodes the answer into result, a
// pointer. It runs nothing and records nothing, so it does not move the run
// on: call it between [Env.Settle] or [Env.Advance] calls to see the state the
// run has reached. Errors are those of [workflow.Query].
func (e *Env) Query(ctx context.Context, runID, name string, arg, result any) error {
	out, err := workflow.Query[json.RawMessage](ctx, e.client, runID, name, arg)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, result); err != nil {
		return fmt.Errorf("workflowtest: query %q of run %s: decoding the answer into %T: %w", name, runID, result, err)
	}
	return nil
}

// Query implements [worlds.Querier] with the registered workflow of the run.
func (r *envRunner) Query(ctx context.Context, w worlds.World, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	e := (*Env)(r)
	e.mu.Lock()
	inner := e.runners[run.WorkflowName]
	e.mu.Unlock()
	q, ok := inner.(worlds.Querier)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not registered with this workflowtest.Env (use workflowtest.Register)", workflow.ErrUnknownWorkflow, run.WorkflowName)
	}
	return q.Query(ctx, w, run, name, arg)
}

// Run is a run in an [Env], with output type O.
type Run[O any] struct {
	env *Env
	id  string
}

// Attach returns a handle on a run of the Env, for example one a workflow started.
func Attach[O any](e *Env, runID string) *Run[O] { return &Run[O]{env: e, id: runID} }

// ID returns the run ID.
func (r *Run[O]) ID() string { return r.id }

// Result drives the Env until the run ends and returns its output, or the
// *[workflow.RunError] of a failed or cancelled run. A run blocked on an error
// of its workflow code (a panic, nondeterminism, a deadlock; see
// [workflow.CodeErrorPolicy]) returns its *[workflow.BlockedError] at once. A run that waits for a hook
// with nothing else due returns an error matching [ErrBlocked] naming the tokens
// of the active hooks of the run and of its descendants (the child runs it
// waits for): resume one with [Env.ResumeHook] and call Result again.
func (r *Run[O]) Result(ctx context.Context) (O, error) {
	var zero O
	var status worlds.RunStatus
	var blocked error
	id := r.id // the run of the chain the run continued as, if it did
	err := r.env.drive(ctx, func() bool {
		for {
			run, err := r.env.world.GetRun(ctx, id)
			status = run.Status
			if blocked = workflow.Blocked(run); err == nil && blocked != nil {
				return true // its code failed: redeliveries would fail the same way
			}
			if err != nil || !run.Status.Terminal() || run.Attributes[workflow.AttrContinuedAs] == "" {
				return err != nil || run.Status.Terminal()
			}
			id = run.Attributes[workflow.AttrContinuedAs]
		}
	}, false)
	if err != nil {
		return zero, err
	}
	if blocked != nil {
		return zero, blocked
	}
	if !status.Terminal() {
		if _, err := r.env.world.GetRun(ctx, id); err != nil {
			return zero, err // no such run
		}
		tokens := r.env.activeTokens(ctx, id)
		return zero, fmt.Errorf("%w: run %s is %s; active hook tokens: [%s]", ErrBlocked, id, status, strings.Join(tokens, " "))
	}
	return workflow.Attach[O](r.env.client, r.id).Result(ctx)
}

// activeTokens returns the quoted tokens of the active hooks of run id and of
// its descendants (child runs, their children, ...): a run blocked on a child
// that waits for a payload is resumed through the child's hook.
func (e *Env) activeTokens(ctx context.Context, id string) []string {
	children := map[string][]string{}
	if runs, err := e.world.ListRuns(ctx, worlds.RunFilter{Limit: worlds.MaxPageSize}); err == nil {
		for _, run := range runs.Items {
			if p := run.Attributes[workflow.AttrParent]; p != "" && !run.Status.Terminal() {
				children[p] = append(children[p], run.RunID)
			}
		}
	}
	var tokens []string
	queue, seen := []string{id}, map[string]bool{id: true}
	for len(queue) > 0 {
		runID := queue[0]
		queue = queue[1:]
		if hooks, err := e.world.ListHooks(ctx, worlds.HookFilter{RunID: runID, Limit: worlds.MaxPageSize}); err == nil {
			for _, h := range hooks.Items {
				if h.Status == worlds.HookActive {
					tokens = append(tokens, strconv.Quote(h.Token))
				}
			}
		}
		kids := children[runID]
		slices.Sort(kids)
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				queue = append(queue, k)
			}
		}
	}
	return tokens
}

// Status returns the run's status without driving anything.
func (r *Run[O]) Status(ctx context.Context) (worlds.RunStatus, error) {
	run, err := r.env.world.GetRun(ctx, r.id)
	return run.Status, err
}

// Cancel cancels the run, as [workflow.Client.Cancel] does.
func (r *Run[O]) Cancel(ctx context.Context, reason string) error {
	return r.env.client.Cancel(ctx, r.id, reason)
}

// Events returns the run's log.
func (r *Run[O]) Events(ctx context.Context) ([]worlds.Event, error) {
	return worlds.AllEvents(ctx, r.env.world, r.id)
}

// Hooks returns the run's hooks, active and disposed.
func (r *Run[O]) Hooks(ctx context.Context) ([]worlds.Hook, error) {
	p, err := r.env.world.ListHooks(ctx, worlds.HookFilter{RunID: r.id})
	return p.Items, err
}

// Ops returns the operations the run recorded, in call order.
func (r *Run[O]) Ops(ctx context.Context) ([]Op, error) {
	evs, err := r.Events(ctx)
	if err != nil {
		return nil, err
	}
	return OpsOf(evs), nil
}
