package workflow

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// RetryPolicy says how often and how fast a failing step is retried. Attempt n
// (n >= 2) starts InitialInterval * Multiplier^(n-2) after attempt n-1 failed,
// capped at MaxInterval and then jittered.
//
// Zero fields take Temporal's defaults, so RetryPolicy{} is a valid policy:
// unlimited attempts, 1s initial interval, multiplier 2, capped at 100 times the
// initial interval, with jitter. That is not the policy of a step without
// [WithRetry]: such a step uses [Config].RetryPolicy, by default
// [DefaultRetryPolicy] (3 attempts). A step without the option thus keeps
// failing after 3 attempts, while WithRetry(RetryPolicy{}) retries until the
// step succeeds or returns a non-retryable error: an error wrapped with [Fatal],
// a non-retryable [ApplicationError], or one whose type name is in
// NonRetryableErrorTypes.
//
// A bad policy (a negative field, a multiplier below 1, a cap below the initial
// interval, an empty type name) is rejected with a *[ConfigError] naming the field
// and value: by [NewClient] for [Config].RetryPolicy, and by [Go] or [Step], before
// anything is recorded, for one given with [WithRetry]. Call [RetryPolicy.Validate]
// where a policy is built from configuration to find out there.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included; 1 disables retries
	// and 0 means unlimited.
	MaxAttempts int
	// InitialInterval is the delay before the second attempt; 0 means 1s.
	InitialInterval time.Duration
	// MaxInterval caps every delay; 0 means 100 * InitialInterval.
	MaxInterval time.Duration
	// Multiplier grows the delay after each attempt; 0 means 2, else at least 1.
	Multiplier float64
	// NoJitter turns off jitter. By default each delay is shortened by up to 20%,
	// by an amount fixed per run, step and attempt, so steps that failed together
	// are not all retried at the same instant.
	NoJitter bool
	// NonRetryableErrorTypes lists error type names that fail the step at once,
	// without further attempts: the Type of an [ApplicationError], the name of a
	// registered error type ([NewErrorType]), or the recorded type of any other
	// error (see [worlds.ErrorInfo].Type), such as [ErrorTypeHeartbeatTimeout]
	// or [ErrorTypePanic].
	NonRetryableErrorTypes []string
}

// Defaults of the zero fields of a [RetryPolicy].
const (
	DefaultRetryInitialInterval = time.Second
	DefaultRetryMultiplier      = 2.0
	// DefaultRetryMaxIntervalFactor times InitialInterval is the cap of a policy
	// whose MaxInterval is zero.
	DefaultRetryMaxIntervalFactor = 100
	// RetryJitter is the largest fraction jitter takes off a delay.
	RetryJitter = 0.2
)

// DefaultRetryPolicy is used by steps without [WithRetry] when [Config].RetryPolicy
// is nil: 3 attempts, 1s then 2s apart (before jitter), capped at a minute.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: time.Minute, Multiplier: 2}

// Validate reports the first bad field of p as a *[ConfigError], or nil.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts < 0:
		return &ConfigError{Field: "RetryPolicy.MaxAttempts", Value: p.MaxAttempts, Reason: "must not be negative (0 means unlimited)"}
	case p.InitialInterval < 0:
		return &ConfigError{Field: "RetryPolicy.InitialInterval", Value: p.InitialInterval, Reason: "must not be negative (0 means 1s)"}
	case p.MaxInterval < 0:
		return &ConfigError{Field: "RetryPolicy.MaxInterval", Value: p.MaxInterval, Reason: "must not be negative (0 means 100 times InitialInterval)"}
	case math.IsNaN(p.Multiplier) || math.IsInf(p.Multiplier, 0) || (p.Multiplier != 0 && p.Multiplier < 1):
		return &ConfigError{Field: "RetryPolicy.Multiplier", Value: p.Multiplier, Reason: "must be 0 (meaning 2) or a finite number of at least 1"}
	case p.MaxInterval > 0 && p.MaxInterval < p.initial():
		return &ConfigError{Field: "RetryPolicy.MaxInterval", Value: p.MaxInterval, Reason: "must not be below InitialInterval " + p.initial().String()}
	}
	for i, t := range p.NonRetryableErrorTypes {
		if t == "" {
			return &ConfigError{Field: fmt.Sprintf("RetryPolicy.NonRetryableErrorTypes[%d]", i), Value: `""`, Reason: "must not be empty"}
		}
	}
	return nil
}

func (p RetryPolicy) initial() time.Duration {
	if p.InitialInterval == 0 {
		return DefaultRetryInitialInterval
	}
	return p.InitialInterval
}

// exhausted reports whether attempt was the policy's last.
func (p RetryPolicy) exhausted(attempt int) bool {
	return p.MaxAttempts > 0 && attempt >= p.MaxAttempts
}

// nonRetryable reports whether errors of type typ fail the step at once.
func (p RetryPolicy) nonRetryable(typ string) bool {
	return typ != "" && slices.Contains(p.NonRetryableErrorTypes, typ)
}

// Backoff returns the delay before attempt+1 after attempt failed, with the zero
// fields' defaults and before jitter.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	m := p.Multiplier
	if m == 0 {
		m = DefaultRetryMultiplier
	}
	initial := p.initial()
	limit := p.MaxInterval
	if limit == 0 {
		limit = DefaultRetryMaxIntervalFactor * initial
	}
	d := float64(initial)
	for i := 1; i < attempt; i++ {
		d *= m
		if d >= float64(limit) {
			return limit
		}
	}
	return min(time.Duration(d), limit)
}

// delay is Backoff(attempt) with the policy's jitter for one attempt of one step.
func (p RetryPolicy) delay(runID, stepID string, attempt int) time.Duration {
	d := p.Backoff(attempt)
	if p.NoJitter || d <= 0 {
		return d
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", runID, stepID, attempt)
	frac := float64(h.Sum64()>>11) / (1 << 53) // uniform in [0, 1)
	return d - time.Duration(float64(d)*RetryJitter*frac)
}

type stepOptions struct {
	retry     RetryPolicy
	timeout   time.Duration
	heartbeat time.Duration
}

// StepOption configures one step call.
type StepOption func(*stepOptions)

// WithRetry sets the step's retry policy; see [RetryPolicy] for what its zero
// fields mean.
func WithRetry(p RetryPolicy) StepOption { return func(o *stepOptions) { o.retry = p } }

// WithMaxAttempts keeps the step's policy otherwise and sets the number of
// attempts; 0 means unlimited.
func WithMaxAttempts(n int) StepOption { return func(o *stepOptions) { o.retry.MaxAttempts = n } }

// WithTimeout bounds each attempt: its context is cancelled after d.
func WithTimeout(d time.Duration) StepOption { return func(o *stepOptions) { o.timeout = d } }

func buildStepOptions(def RetryPolicy, opts []StepOption) (stepOptions, error) {
	o := stepOptions{retry: def}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.retry.Validate(); err != nil {
		return o, err
	}
	if o.timeout < 0 {
		return o, &ConfigError{Field: "WithTimeout", Value: o.timeout, Reason: "must not be negative"}
	}
	if o.heartbeat < 0 {
		return o, &ConfigError{Field: "WithHeartbeatTimeout", Value: o.heartbeat, Reason: "must not be negative"}
	}
	return o, nil
}

// Future is the pending result of a step started with [Go].
type Future[O any] struct {
	exec *execution
	id   string
	name string
	rec  *record
	err  error
}

// Go starts a step without waiting for it, so several steps can run in parallel;
// [Future.Get] waits for its result. Steps are plain functions; fn runs in a step
// delivery or inline in the workflow's, at least once, with a context carrying the
// step's [Info]. Its input and output are stored as JSON.
func Go[I, O any](ctx Context, name string, fn func(context.Context, I) (O, error), in I, opts ...StepOption) *Future[O] {
	e, err := execOf(ctx)
	if err != nil {
		return &Future[O]{err: err}
	}
	if err := e.refused(ctx); err != nil {
		e.enter()
		return &Future[O]{err: err}
	}
	if name == "" || fn == nil {
		e.enter()
		return &Future[O]{err: &ConfigError{Field: "step name and function", Value: fmt.Sprintf("%q", name), Reason: "both are required"}}
	}
	o, err := buildStepOptions(e.rt.retry, opts)
	if err != nil {
		e.enter()
		return &Future[O]{err: err}
	}
	pos, rec := e.next(opStep, name)
	id := correlationID(opStep, pos, e.runID)
	if e.mode == modeCapture && id == e.target {
		e.capture = &captured{name: name, opts: o, call: erase(name, fn, e.rt.maxPayload)}
		e.stop(outCaptured, nil)
	}
	f := &Future[O]{exec: e, id: id, name: name, rec: rec}
	if rec == nil {
		raw, err := encode("step "+quote(name)+" input", in, e.rt.maxPayload)
		if err != nil {
			f.err = err
			e.pos-- // nothing was recorded at this position
			return f
		}
		e.pending = append(e.pending, pendingOp{kind: opStep, event: worlds.Event{
			Type: worlds.EventStepCreated, CorrelationID: id, StepName: name, Input: raw,
		}, step: &captured{name: name, opts: o, call: erase(name, fn, e.rt.maxPayload)}})
	}
	return f
}

// Get waits for the step and returns its output, or a *[StepError] when it failed
// for good.
func (f *Future[O]) Get(ctx Context) (O, error) {
	var zero O
	if f.err != nil {
		return zero, f.err
	}
	e, err := execFor(ctx, f.exec)
	if err != nil {
		return zero, err
	}
	e.enter()
	for {
		done, _ := f.readyEvent()
		if err := e.interrupted(ctx, done); err != nil {
			return zero, err
		}
		if done != nil {
			break
		}
		e.block()
	}
	e.consume(f.rec.done)
	if f.rec.done.Type == worlds.EventStepFailed {
		info := worlds.ErrorInfo{Message: "step failed"}
		if f.rec.done.Error != nil {
			info = *f.rec.done.Error
		}
		if strings.HasPrefix(f.name, childStepPrefix) {
			return zero, childError(e.runID, f.id, info, e.rt.errs)
		}
		return zero, &StepError{StepID: f.id, StepName: f.name, Info: info, reg: e.rt.errs}
	}
	var out O
	if err := decode(f.rec.done.Output, &out); err != nil {
		return zero, &SerializationError{What: "step " + quote(f.name) + " output", Err: err}
	}
	return out, nil
}

// Step runs a step and waits for its result: Go(...).Get(ctx).
func Step[I, O any](ctx Context, name string, fn func(context.Context, I) (O, error), in I, opts ...StepOption) (O, error) {
	return Go(ctx, name, fn, in, opts...).Get(ctx)
}

// erase turns a typed step function into a stepCall on JSON, recovering panics as
// retryable errors.
func erase[I, O any](name string, fn func(context.Context, I) (O, error), limit int) stepCall {
	return func(ctx context.Context, input json.RawMessage) (out json.RawMessage, err error) {
		var in I
		if err := decode(input, &in); err != nil {
			return nil, Fatal(&SerializationError{What: "step " + quote(name) + " input", Err: err})
		}
		defer func() {
			if r := recover(); r != nil {
				err = &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
			}
		}()
		v, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		raw, err := encode("step "+quote(name)+" output", v, limit)
		if err != nil {
			return nil, Fatal(err)
		}
		return raw, nil
	}
}

// PanicError is a panic recovered from step or workflow code.
type PanicError struct {
	Value string
	Stack string
}

func (e *PanicError) Error() string { return "workflow: panic: " + e.Value }

// Sleep suspends the workflow for d with a durable timer: the run is woken by a
// delivery due at the resume time, from seconds to months later, surviving
// restarts. A d of zero or less returns at once.
func Sleep(ctx Context, d time.Duration) error {
	e, err := execOf(ctx)
	if err != nil {
		return err
	}
	if d <= 0 {
		e.enter()
		return nil
	}
	if maxd := e.world.Capabilities().MaxDelay; maxd > 0 && d > maxd {
		e.enter()
		return &ConfigError{Field: "Sleep duration", Value: d, Reason: fmt.Sprintf("longer than this World's maximum delay %s", maxd)}
	}
	return NewTimer(ctx, d).Get(ctx)
}

// HookOptions configure [CreateHook].
type HookOptions struct {
	// Token is how the outside world addresses the hook (ResumeHook, webhooks).
	// Empty: a random unguessable token. At most worlds.MaxTokenLength bytes.
	Token string
	// Metadata is stored with the hook as JSON, for listings and UIs.
	Metadata any
}

// Hook receives payloads of type T sent to its token from outside the workflow.
type Hook[T any] struct {
	// Token addresses the hook; pass it to whoever resumes the run.
	Token string
	// ID is the hook's correlation ID ("hook_3.<runID>").
	ID       string
	exec     *execution
	rec      *record
	next     int
	disposed bool
}

// CreateHook creates a hook that payloads can be sent to with [ResumeHook] or the
// webhook handler. If another active hook owns the token, [Hook.Receive] returns an
// error matching [ErrHookConflict]. The hook is disposed when the run ends.
func CreateHook[T any](ctx Context, opts HookOptions) (*Hook[T], error) {
	e, err := execOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.refused(ctx); err != nil {
		e.enter()
		return nil, err
	}
	if len(opts.Token) > worlds.MaxTokenLength {
		e.enter()
		return nil, &ConfigError{Field: "HookOptions.Token", Value: len(opts.Token), Reason: fmt.Sprintf("longer than %d bytes", worlds.MaxTokenLength)}
	}
	var meta json.RawMessage
	if opts.Metadata != nil {
		if meta, err = encode("hook metadata", opts.Metadata, e.rt.maxPayload); err != nil {
			e.enter()
			return nil, err
		}
	}
	pos, rec := e.next(opHook, "")
	h := &Hook[T]{ID: correlationID(opHook, pos, e.runID), exec: e, rec: rec}
	if rec != nil {
		h.Token = rec.created.Token
		return h, nil
	}
	h.Token = opts.Token
	if h.Token == "" {
		var b [24]byte
		_, _ = rand.Read(b[:])
		h.Token = base64.RawURLEncoding.EncodeToString(b[:])
	}
	e.pending = append(e.pending, pendingOp{kind: opHook, event: worlds.Event{
		Type: worlds.EventHookCreated, CorrelationID: h.ID, Token: h.Token, Metadata: meta,
	}})
	return h, nil
}

// Receive waits for the next payload sent to the hook, in arrival order.
func (h *Hook[T]) Receive(ctx Context) (T, error) {
	var zero T
	e, err := execFor(ctx, h.exec)
	if err != nil {
		return zero, err
	}
	e.enter()
	if h.disposed {
		return zero, fmt.Errorf("%w: hook %s", ErrHookDisposed, h.ID)
	}
	for {
		ev, ok := h.readyEvent()
		if err := e.interrupted(ctx, ev); err != nil {
			return zero, err
		}
		if ok && h.rec.created.Type == worlds.EventHookConflict {
			e.consume(&h.rec.created)
			return zero, fmt.Errorf("%w: token %q", ErrHookConflict, h.Token)
		}
		if ok {
			break
		}
		e.block()
	}
	ev := &h.rec.received[h.next]
	h.next++
	e.consume(ev)
	var v T
	if err := decode(ev.Payload, &v); err != nil {
		return zero, &SerializationError{What: "hook " + h.ID + " payload", Err: err}
	}
	return v, nil
}

// Dispose releases the hook's token before the run ends, so another hook may take
// it; payloads sent afterwards are refused. Receive on a disposed hook returns an
// error matching [ErrHookDisposed]. The disposal is recorded with the workflow's
// next write; hooks still active when the run ends are disposed with it.
func (h *Hook[T]) Dispose(ctx Context) error {
	e, err := execFor(ctx, h.exec)
	if err != nil {
		return err
	}
	e.enter()
	if h.disposed {
		return nil
	}
	if h.rec == nil {
		h.rec = e.hist.byID[h.ID]
	}
	h.disposed = true
	if (h.rec == nil || !h.rec.disposed) && (h.rec == nil || h.rec.created.Type != worlds.EventHookConflict) {
		e.pending = append(e.pending, pendingOp{kind: opHook, event: worlds.Event{Type: worlds.EventHookDisposed, CorrelationID: h.ID}})
	}
	return nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// encode marshals v as JSON, naming it in errors, and enforces the size limit.
func encode(what string, v any, limit int) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &SerializationError{What: what, Err: err}
	}
	if limit > 0 && len(raw) > limit {
		return nil, &SerializationError{What: what, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(raw), limit)}
	}
	return raw, nil
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return json.Unmarshal(raw, v)
}
