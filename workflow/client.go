package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Workflow is a durable workflow: a type whose Run method is replayed from its run's
// log. Its runs are recorded under worlds.WorkflowName of the type (or its
// WorkflowName method, see [worlds.Namer]).
type Workflow[I, O any] interface {
	Run(ctx Context, in I) (O, error)
}

// IDGenerator makes run IDs. Implementations must be safe for concurrent use and
// return IDs unique across processes.
type IDGenerator interface {
	NewID() string
}

// DefaultMaxPayloadBytes bounds workflow inputs, outputs, step inputs and outputs and
// hook payloads when [Config.MaxPayloadBytes] is zero.
const DefaultMaxPayloadBytes = 256 << 10

// Config configures a [Client] and the runtime its [Client.Runner] and [Client.Serve] run.
type Config struct {
	// World stores runs and carries deliveries. Required.
	World worlds.World
	// Clock returns the current time; nil means time.Now. It schedules timers and
	// retries; workflow code reads time from [Now], not from here.
	Clock func() time.Time
	// IDs makes run IDs; nil means random, time-ordered IDs ("wrun_...").
	IDs IDGenerator
	// Logger receives the runtime's own logs; nil discards them.
	Logger *slog.Logger
	// Observer receives live run and step events; nil means none.
	Observer Observer
	// MaxPayloadBytes bounds every JSON value the runtime stores; zero means
	// DefaultMaxPayloadBytes, or the World's MaxItemBytes when that is smaller.
	MaxPayloadBytes int
	// PollInterval is the longest pause between reads when waiting for a result or
	// a stream without notifications; zero means 200ms.
	PollInterval time.Duration
	// QueueSteps runs every step attempt in a delivery of its own. By default a
	// step that is the only new operation the workflow reaches runs inline, in
	// the workflow's delivery, recorded as it starts with its creation, its
	// outcome appended with whatever the code reaches next: about one append per
	// step and no queue round trip. Parallel steps, retries, and steps reached
	// after the entry point's hand-off time ([worlds.HandOffAt]) are queued either
	// way.
	QueueSteps bool
	// StepInterceptor, if set, wraps every step attempt; see [StepInterceptor].
	StepInterceptor StepInterceptor
	// Cache bounds the run cache, which keeps suspended executions in memory so a
	// run's next delivery in this process resumes where it stopped instead of
	// replaying the run; on by default. See [CacheConfig] and [CacheEnv].
	Cache CacheConfig
	// DeadlockTimeout bounds one turn of workflow code: the time from when a
	// delivery starts or resumes it (a replay of the whole log included) until
	// it reaches a workflow operation that waits, or returns. Code that keeps its
	// goroutine longer (blocked on a channel or a mutex, sleeping, looping) is
	// given up on with a *[DeadlockError], so a delivery always ends; steps are
	// not bounded by it. Zero means [DefaultDeadlockTimeout]. It is measured in
	// real time, not on Clock.
	DeadlockTimeout time.Duration
	// CodeErrors says what a failure of workflow code (a panic, nondeterminism,
	// a deadlock) does to its run: by default ([BlockOnCodeError]) the run
	// stays running, blocked, and is delivered again with backoff until fixed
	// code gets past the failure; [FailOnCodeError] fails it at once. A
	// workflow registered with [OnCodeError] uses its own.
	CodeErrors CodeErrorPolicy
	// BlockedRetry is the backoff of a blocked run's deliveries.
	BlockedRetry BlockedRetry
	// ErrorTypes registers Go error types under stable names, so a step error of
	// one of them is recorded with its name and JSON value and errors.As on the
	// type works in workflow code, live and after replay; see [NewErrorType].
	ErrorTypes []ErrorType
	// RetryPolicy is the retry policy of steps called without [WithRetry]; nil
	// means [DefaultRetryPolicy] (3 attempts). [NewClient] rejects a bad one.
	RetryPolicy *RetryPolicy
	// Workflows are the workflows whose code the client runs outside
	// deliveries, to answer [Query] (worlds.Runners(workflow.Use(...), ...)).
	// A process that runs deliveries through [Client.Runner] or
	// [Client.Serve] needs none: their runners are added. Nil: none.
	Workflows worlds.Runner
}

// engine is the validated runtime configuration.
type engine struct {
	world        worlds.World
	clock        func() time.Time
	ids          IDGenerator
	log          *slog.Logger
	obs          Observer
	maxPayload   int
	poll         time.Duration
	queueSteps   bool
	intercept    StepInterceptor
	cache        *runCache // nil: no run cache
	steps        *runningSteps
	deadlock     time.Duration // zero: DefaultDeadlockTimeout
	codeErrors   CodeErrorPolicy
	blockedRetry BlockedRetry
	errs         *errorRegistry // nil: no registered error types
	retry        RetryPolicy    // of steps without WithRetry
}

func newEngine(cfg Config) (*engine, error) {
	e := &engine{world: cfg.World, clock: cfg.Clock, ids: cfg.IDs, log: cfg.Logger, obs: cfg.Observer,
		maxPayload: cfg.MaxPayloadBytes, poll: cfg.PollInterval, queueSteps: cfg.QueueSteps, intercept: cfg.StepInterceptor,
		steps: &runningSteps{}, deadlock: cfg.DeadlockTimeout, codeErrors: cfg.CodeErrors}
	if e.clock == nil {
		e.clock = time.Now
	}
	if e.ids == nil {
		e.ids = randomIDs{}
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.obs == nil {
		e.obs = NopObserver{}
	}
	switch {
	case cfg.MaxPayloadBytes < 0:
		return nil, &ConfigError{Field: "Config.MaxPayloadBytes", Value: cfg.MaxPayloadBytes, Reason: "must not be negative"}
	case cfg.PollInterval < 0:
		return nil, &ConfigError{Field: "Config.PollInterval", Value: cfg.PollInterval, Reason: "must not be negative"}
	case cfg.DeadlockTimeout < 0:
		return nil, &ConfigError{Field: "Config.DeadlockTimeout", Value: cfg.DeadlockTimeout, Reason: "must not be negative"}
	}
	if err := cfg.Cache.validate(); err != nil {
		return nil, err
	}
	if err := cfg.CodeErrors.validate("Config.CodeErrors"); err != nil {
		return nil, err
	}
	var err error
	if e.blockedRetry, err = cfg.BlockedRetry.withDefaults(); err != nil {
		return nil, err
	}
	errs, err := newErrorRegistry(cfg.ErrorTypes)
	if err != nil {
		return nil, err
	}
	e.errs = errs
	e.retry = DefaultRetryPolicy
	if cfg.RetryPolicy != nil {
		if err := cfg.RetryPolicy.Validate(); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.Field = "Config." + ce.Field
			}
			return nil, err
		}
		e.retry = *cfg.RetryPolicy
		e.retry.NonRetryableErrorTypes = slices.Clone(e.retry.NonRetryableErrorTypes)
	}
	if !cfg.Cache.Disabled && !cacheOffByEnv() {
		e.cache = newRunCache(cfg.Cache, e.clock, e.obs)
	}
	if e.maxPayload == 0 {
		e.maxPayload = DefaultMaxPayloadBytes
		if cfg.World != nil {
			if m := cfg.World.Capabilities().MaxItemBytes; m > 0 && m/2 < e.maxPayload {
				// Leave room for the rest of the item the value is stored in.
				e.maxPayload = m / 2
			}
		}
	}
	if e.poll == 0 {
		e.poll = 200 * time.Millisecond
	}
	return e, nil
}

// defaultEngine serves Runners used without a Client (for example handed straight
// to a World's worker entry point).
//
// It has no run cache: nothing would end the executions it held.
func defaultEngine(w worlds.World) *engine {
	e, _ := newEngine(Config{World: w, Cache: CacheConfig{Disabled: true}})
	return e
}

type engineKey struct{}

func engineFrom(ctx context.Context, w worlds.World) *engine {
	if e, ok := ctx.Value(engineKey{}).(*engine); ok {
		if e.world == w || w == nil {
			return e
		}
		cp := *e
		cp.world = w
		return &cp
	}
	return defaultEngine(w)
}

type randomIDs struct{}

// NewID returns "wrun_" + 12 hex digits of milliseconds + 16 random hex digits, so
// IDs sort by creation time.
func (randomIDs) NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("wrun_%012x%s", time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}

// Client starts and inspects runs, and runs deliveries with its configuration.
type Client struct {
	eng *engine

	mu    sync.Mutex
	known []worlds.Runner // runners whose code answers queries
}

// NewClient validates cfg and returns a client. It does not contact the World.
func NewClient(cfg Config) (*Client, error) {
	if cfg.World == nil {
		return nil, &ConfigError{Field: "Config.World", Value: nil, Reason: "required"}
	}
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{eng: e}
	c.know(cfg.Workflows)
	return c, nil
}

// World returns the client's World.
func (c *Client) World() worlds.World { return c.eng.world }

// Runner wraps r so its deliveries run with this client's configuration (clock,
// logger, observer, limits). Use it when handing runners to a World's worker entry
// point yourself.
func (c *Client) Runner(r worlds.Runner) worlds.Runner {
	c.know(r)
	return &configured{inner: r, eng: c.eng}
}

// Serve runs the client's World's deliveries with runners until ctx ends. The World
// must implement [worlds.Server] (the embedded World does). When it returns, the
// run cache is flushed ([Client.FlushCache]).
func (c *Client) Serve(ctx context.Context, runners ...worlds.Runner) error {
	srv, ok := c.eng.world.(worlds.Server)
	if !ok {
		return &ConfigError{Field: "Config.World", Value: fmt.Sprintf("%T", c.eng.world), Reason: "does not implement worlds.Server; run its worker entry point instead"}
	}
	defer c.FlushCache()
	return srv.Serve(ctx, c.Runner(worlds.Runners(runners...)))
}

// FlushCache ends every execution held in the client's run cache (their deferred
// functions run); the runs replay on their next delivery. Call it when a process
// that runs deliveries through [Client.Runner] stops taking them, so no parked
// goroutine outlives it; [Client.Serve] does it itself.
func (c *Client) FlushCache() {
	if c.eng.cache != nil {
		c.eng.cache.flush()
	}
}

// CacheStats returns a snapshot of the client's run cache; all zero when the
// cache is off.
func (c *Client) CacheStats() CacheStats {
	if c.eng.cache == nil {
		return CacheStats{}
	}
	return c.eng.cache.stats()
}

type configured struct {
	inner worlds.Runner
	eng   *engine
}

func (r *configured) Workflows() []string { return r.inner.Workflows() }

func (r *configured) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	return r.inner.Run(context.WithValue(ctx, engineKey{}, r.eng), w, d)
}

// workflowName is the name runs of w are recorded under.
func workflowName(w any) string {
	if n, ok := w.(worlds.Namer); ok {
		return n.WorkflowName()
	}
	return worlds.TypeWorkflowName(reflect.TypeOf(w))
}

// Use registers a workflow: the returned runner executes its deliveries. Combine
// several with worlds.Runners(workflow.Use(A{}), workflow.Use(B{})).
func Use[I, O any](w Workflow[I, O], opts ...UseOption) worlds.Runner {
	r := &runner[I, O]{wf: w, wfName: workflowName(w)}
	for _, opt := range opts {
		opt(&r.opts)
	}
	return r
}

type runner[I, O any] struct {
	wf     Workflow[I, O]
	wfName string
	opts   useOptions
}

func (r *runner[I, O]) codeErrors() *CodeErrorPolicy { return r.opts.codeErrors }

func (r *runner[I, O]) Workflows() []string { return []string{r.wfName} }
func (r *runner[I, O]) name() string        { return r.wfName }

func (r *runner[I, O]) inputType() reflect.Type { return reflect.TypeFor[I]() }

func (r *runner[I, O]) invoke(ctx Context, input json.RawMessage) (json.RawMessage, error) {
	e := ctx.execution()
	e.flow = r
	var in I
	if err := decode(input, &in); err != nil {
		return nil, Fatal(&SerializationError{What: "workflow input", Err: err})
	}
	out, err := r.wf.Run(ctx, in)
	if err != nil {
		return nil, err
	}
	return encode("workflow output", out, e.rt.maxPayload)
}

func (r *runner[I, O]) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	if d.Input.WorkflowName != r.wfName {
		return fmt.Errorf("%w: %q delivered to the runner of %q", ErrUnknownWorkflow, d.Input.WorkflowName, r.wfName)
	}
	eng := engineFrom(ctx, w)
	if p := r.opts.codeErrors; p != nil {
		if err := p.validate("OnCodeError"); err != nil {
			return fmt.Errorf("workflow %s: %w", r.wfName, err)
		}
	}
	switch d.Input.Kind {
	case worlds.DeliverWorkflow:
		return eng.advance(ctx, d, r)
	case worlds.DeliverStep:
		return eng.runStep(ctx, d, r)
	}
	return nil // expiry is the World's business
}

// StartOption configures [Start].
type StartOption func(*startOptions)

type startOptions struct {
	id    string
	attrs map[string]string
}

// WithRunID fixes the run ID instead of generating one. Starting again with the
// same ID, workflow and input returns the existing run, queueing its first
// delivery again while it has not started, so a Start whose answer was lost or
// whose queueing failed can simply be retried; starting an existing ID with
// another workflow or input fails with an error matching worlds.ErrRunExists.
func WithRunID(id string) StartOption { return func(o *startOptions) { o.id = id } }

// WithAttributes stores string attributes on the run, for listings.
func WithAttributes(attrs map[string]string) StartOption {
	return func(o *startOptions) { o.attrs = attrs }
}

// Start creates a run of workflow w with input in and queues its first delivery.
// On a World that starts runs eagerly ([worlds.EagerStarter]: the embedded
// World while this process serves the workflow and has a worker free), the
// first delivery runs at once instead, and Start returns once the run's
// creation is written together with the delivery's first write.
func Start[I, O any](ctx context.Context, c *Client, w Workflow[I, O], in I, opts ...StartOption) (*Run[O], error) {
	if c == nil {
		return nil, &ConfigError{Field: "client", Value: nil, Reason: "required"}
	}
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	name := workflowName(w)
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("workflow: start %s: %w", name, err)
	}
	if err := validateValue(name, in); err != nil {
		return nil, fmt.Errorf("workflow: start %s: %w", name, err)
	}
	raw, err := encode("workflow input", in, c.eng.maxPayload)
	if err != nil {
		return nil, err
	}
	if err := worlds.ValidateJSON("input", raw); err != nil {
		return nil, fmt.Errorf("workflow: start %s: %w", name, err)
	}
	id := o.id
	if id == "" {
		id = c.eng.ids.NewID()
	}
	if _, err := worlds.StartRun(ctx, c.eng.world, id, name, raw, o.attrs); err != nil {
		return nil, fmt.Errorf("workflow: start %s: %w", name, err)
	}
	return &Run[O]{c: c, id: id}, nil
}

// Run is a handle on a run whose output has type O.
type Run[O any] struct {
	c  *Client
	id string
}

// Attach returns a handle on an existing run, typed by its output.
func Attach[O any](c *Client, runID string) *Run[O] { return &Run[O]{c: c, id: runID} }

// ID returns the run ID.
func (r *Run[O]) ID() string { return r.id }

// Status returns the run's current status.
func (r *Run[O]) Status(ctx context.Context) (worlds.RunStatus, error) {
	run, err := r.c.eng.world.GetRun(ctx, r.id)
	if err != nil {
		return "", err
	}
	return run.Status, nil
}

// Result waits until the run ends and returns its output; a failed or cancelled run
// returns a *[RunError] carrying the persisted error. A run that continued as new
// ([ContinueAsNew]) is followed to the last run of its chain, whose output or
// error Result returns.
func (r *Run[O]) Result(ctx context.Context) (O, error) {
	var zero O
	run, err := r.c.Wait(ctx, r.id)
	if err != nil {
		return zero, err
	}
	var out O
	if err := decode(run.Output, &out); err != nil {
		return zero, &SerializationError{What: "run " + r.id + " output", Err: err}
	}
	return out, nil
}

// Cancel cancels the run; see [Client.Cancel].
func (r *Run[O]) Cancel(ctx context.Context, reason string) error {
	return r.c.Cancel(ctx, r.id, reason)
}

// GetRun returns the run view.
func (c *Client) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	return c.eng.world.GetRun(ctx, runID)
}

// Wait polls the run until it ends and returns its view; a failed or cancelled run
// also returns a *[RunError]. A run that continued as new ([ContinueAsNew]) is
// followed to the last run of its chain, whose view Wait returns. On a World
// that tells in-process waiters of a run's end ([worlds.RunNotifier]: the
// embedded World), Wait returns as soon as an end written in this process
// commits, and polls only for ends written elsewhere.
func (c *Client) Wait(ctx context.Context, runID string) (worlds.Run, error) {
	delay := 5 * time.Millisecond
	notifier, _ := c.eng.world.(worlds.RunNotifier)
	var ended <-chan struct{}
	stop := func() {}
	defer func() { stop() }()
	subscribed := ""
	for {
		if notifier != nil && subscribed != runID {
			// Subscribe before reading, so an end between the two is not missed.
			stop()
			ended, stop = notifier.SubscribeRun(runID)
			subscribed = runID
		}
		run, err := c.eng.world.GetRun(ctx, runID)
		if err != nil {
			return run, err
		}
		switch run.Status {
		case worlds.RunCompleted:
			if next := run.Attributes[AttrContinuedAs]; next != "" {
				runID = next // continued as new: wait for the chain's end
				continue
			}
			return run, nil
		case worlds.RunFailed:
			info := worlds.ErrorInfo{Message: "failed"}
			if run.Error != nil {
				info = *run.Error
			}
			return run, &RunError{RunID: runID, Status: run.Status, Info: info, reg: c.eng.errs}
		case worlds.RunCancelled:
			return run, &RunError{RunID: runID, Status: run.Status, Info: worlds.ErrorInfo{Message: cancelReason(run)}}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return run, ctx.Err()
		case <-ended:
			t.Stop()
		case <-t.C:
		}
		delay = min(delay*2, c.eng.poll)
	}
}

func cancelReason(run worlds.Run) string {
	if run.CancelReason != "" {
		return run.CancelReason
	}
	if r := run.Attributes["cancel_reason"]; r != "" {
		return r
	}
	return "cancelled"
}

// Cancel asks a run to stop. A pending run ends cancelled at once. A running
// run's code is told: its next blocking operation (a step's Get, a sleep, a
// hook's Receive, a Select) returns an error matching [ErrCancelled], as does
// every blocking operation after it, and operations it starts afterwards do
// not run; under [WithoutCancel] they do, for cleanup. Step attempts running in
// this process see their context cancelled, with the *[CancelledError] as its
// cause; steps elsewhere run on and their results are ignored. When the code
// returns, the run ends cancelled, its children started with [StartChild] are
// cancelled the same way (unless started with [WithCancelWithParent](false)),
// its parent is woken, and on the AWS World its pending timers' schedules are
// deleted. Cancel returns once the request is written; [Run.Result] waits for
// the end. The RPC's runs.cancel and the web UI do the same through
// [worlds.RequestCancel].
//
// Cancelling a finished run returns an error matching worlds.ErrRunFinished;
// it also finishes what an earlier cancel of the run left undone (cancelling its
// children, telling its parent).
func (c *Client) Cancel(ctx context.Context, runID, reason string) error {
	return c.eng.cancelRun(ctx, runID, reason)
}

func (e *engine) cancelRun(ctx context.Context, runID, reason string) error {
	asked := time.Now()
	before, err := worlds.RequestCancel(ctx, e.world, runID, reason)
	if err != nil {
		err = fmt.Errorf("workflow: cancel run %s: %w", runID, err)
		if errors.Is(err, worlds.ErrRunFinished) && before.Status == worlds.RunCancelled {
			err = errors.Join(err, e.cancelLinks(ctx, before))
		}
		return err
	}
	if before.Status != worlds.RunPending {
		if reason == "" {
			reason = "cancelled"
		}
		e.steps.interrupt(runID, asked, &CancelledError{RunID: runID, Reason: reason})
		return nil
	}
	// A pending run ended at once: nothing of its code ran to clean up.
	if e.cache != nil {
		e.cache.drop(runID)
	}
	run, gerr := e.world.GetRun(ctx, runID)
	e.obs.RunFinished(ctx, Info{RunID: runID, WorkflowName: before.WorkflowName}, worlds.RunCancelled, errors.New(cancelReason(run)))
	e.closeStreams(ctx, runID)
	if gerr != nil {
		return fmt.Errorf("workflow: run %s cancelled; reading it to cancel its children: %w", runID, gerr)
	}
	return e.cancelLinks(ctx, run)
}

// cancelLinks cancels the children of cancelled run and tells its parent. It
// also cancels a continuation an attempt of the run created before the run was
// cancelled: a cancelled run never queues its continuation's first delivery, so
// that run would sit pending for ever. A run cancelled while still pending
// (its first delivery created the continuation but wrote neither its end nor
// its start) reaches no other code that would do it.
func (e *engine) cancelLinks(ctx context.Context, run worlds.Run) error {
	return errors.Join(e.abandonContinuation(ctx, run), e.cancelChildren(ctx, run.RunID, cancelReason(run)), e.notifyParent(ctx, run))
}

// ResumeHook sends payload (encoded as JSON) to the hook owning token and wakes its
// run. An unknown or disposed token returns an error matching worlds.ErrHookNotFound.
func ResumeHook(ctx context.Context, c *Client, token string, payload any) (worlds.ResumeContext, error) {
	raw, err := encode("hook payload", payload, c.eng.maxPayload)
	if err != nil {
		return worlds.ResumeContext{}, err
	}
	return worlds.ResumeHook(ctx, c.eng.world, token, raw)
}

func (e *engine) closeStreams(ctx context.Context, runID string) {
	infos, err := e.world.ListStreams(ctx, runID)
	if err != nil {
		return
	}
	for _, s := range infos {
		if !s.Closed {
			if err := e.world.CloseStream(ctx, runID, s.Name); err != nil {
				e.log.WarnContext(ctx, "closing stream", "run_id", runID, "stream", s.Name, "error", err)
			}
		}
	}
}
