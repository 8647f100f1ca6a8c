package workflow

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// RetryPolicy says how often and how fast a failing step is retried. Attempt n
// (n >= 2) starts InitialInterval * Multiplier^(n-2) after attempt n-1 failed,
// capped at MaxInterval.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included; 1 disables retries.
	MaxAttempts     int
	InitialInterval time.Duration
	MaxInterval     time.Duration
	Multiplier      float64
}

// DefaultRetryPolicy is used by steps without [WithRetry]: 3 attempts, 1s then 2s apart.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: time.Minute, Multiplier: 2}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1:
		return &ConfigError{Field: "RetryPolicy.MaxAttempts", Value: p.MaxAttempts, Reason: "must be at least 1"}
	case p.InitialInterval < 0:
		return &ConfigError{Field: "RetryPolicy.InitialInterval", Value: p.InitialInterval, Reason: "must not be negative"}
	case p.MaxInterval < 0:
		return &ConfigError{Field: "RetryPolicy.MaxInterval", Value: p.MaxInterval, Reason: "must not be negative"}
	case p.Multiplier != 0 && p.Multiplier < 1:
		return &ConfigError{Field: "RetryPolicy.Multiplier", Value: p.Multiplier, Reason: "must be 0 (meaning 2) or at least 1"}
	}
	return nil
}

// Backoff returns the delay before attempt+1 after attempt failed.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	m := p.Multiplier
	if m == 0 {
		m = 2
	}
	d := float64(p.InitialInterval)
	for i := 1; i < attempt; i++ {
		d *= m
		if p.MaxInterval > 0 && d >= float64(p.MaxInterval) {
			return p.MaxInterval
		}
	}
	if p.MaxInterval > 0 && d > float64(p.MaxInterval) {
		return p.MaxInterval
	}
	return time.Duration(d)
}

type stepOptions struct {
	retry   RetryPolicy
	timeout time.Duration
}

// StepOption configures one step call.
type StepOption func(*stepOptions)

// WithRetry sets the step's retry policy.
func WithRetry(p RetryPolicy) StepOption { return func(o *stepOptions) { o.retry = p } }

// WithMaxAttempts keeps the default backoff and sets the number of attempts.
func WithMaxAttempts(n int) StepOption { return func(o *stepOptions) { o.retry.MaxAttempts = n } }

// WithTimeout bounds each attempt: its context is cancelled after d.
func WithTimeout(d time.Duration) StepOption { return func(o *stepOptions) { o.timeout = d } }

func buildStepOptions(opts []StepOption) (stepOptions, error) {
	o := stepOptions{retry: DefaultRetryPolicy}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.retry.validate(); err != nil {
		return o, err
	}
	if o.timeout < 0 {
		return o, &ConfigError{Field: "WithTimeout", Value: o.timeout, Reason: "must not be negative"}
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
	o, err := buildStepOptions(opts)
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
			return zero, childError(e.runID, f.id, info)
		}
		return zero, &StepError{StepID: f.id, StepName: f.name, Info: info}
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
