package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Heartbeat errors.
var (
	// ErrHeartbeatTimeout: a step attempt with [WithHeartbeatTimeout] went longer
	// than its timeout without calling [Heartbeat]. The attempt fails with an
	// [ApplicationError] of type [ErrorTypeHeartbeatTimeout], retried like any
	// other error, and its context is cancelled with this cause.
	ErrHeartbeatTimeout = errors.New("workflow: step heartbeat timed out")
	// ErrAttemptSuperseded: the World refused a heartbeat because the attempt is
	// no longer the step's running one (it timed out and was retried, the step
	// ended, the run ended). The attempt's context is cancelled with this cause:
	// stop work whose outcome would be refused too.
	ErrAttemptSuperseded = errors.New("workflow: step attempt is no longer the running one")
	// ErrNoHeartbeatDetails is returned by [HeartbeatDetails] when no earlier
	// attempt of the step recorded details.
	ErrNoHeartbeatDetails = errors.New("workflow: no heartbeat details recorded")
)

// defaultHeartbeatThrottle is the shortest interval between recorded heartbeats
// of an attempt without a heartbeat timeout.
const defaultHeartbeatThrottle = 30 * time.Second

// WithHeartbeatTimeout makes each attempt of the step call [Heartbeat] at least
// every d: an attempt that goes longer is failed with an error of type
// [ErrorTypeHeartbeatTimeout] and retried under the step's policy. Set it well
// below the World's delivery lease (a minute on the embedded World), so that a
// step that hangs, or whose process died, is noticed in d rather than when the
// lease runs out. The process running the attempt cancels its context after d
// without a heartbeat and records the failure without waiting for it to return;
// a step delivery queued d after the attempt starts (and again after each
// recorded heartbeat) records it when that process is gone. Zero means no
// heartbeat timeout.
func WithHeartbeatTimeout(d time.Duration) StepOption {
	return func(o *stepOptions) { o.heartbeat = d }
}

// heartbeat is the heartbeat state of one step attempt.
type heartbeat struct {
	e        *engine
	info     Info
	timeout  time.Duration
	throttle time.Duration
	// prev are the details recorded before this attempt started.
	prev json.RawMessage
	// kick resets the attempt's watchdog; nil without a timeout.
	kick chan struct{}
	// cancel ends the attempt when the World refuses its heartbeat.
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	lastWrite time.Time       // when a heartbeat was last sent to the World
	pending   json.RawMessage // details of a throttled heartbeat, not recorded yet
}

func newHeartbeat(e *engine, info Info, timeout time.Duration, prev json.RawMessage) *heartbeat {
	hb := &heartbeat{e: e, info: info, timeout: timeout, throttle: defaultHeartbeatThrottle, prev: prev}
	if timeout > 0 {
		// A third of the timeout: even a heartbeat sent just after a throttled one
		// is recorded well before the deadline a step delivery checks.
		hb.throttle = timeout / 3
		hb.kick = make(chan struct{}, 1)
	}
	return hb
}

// Heartbeat reports from inside a step that the attempt is alive and how far it
// got: details (encoded as JSON; nil records none and keeps the last) are stored
// with the step, and the next attempt reads them with [HeartbeatDetails] to
// resume instead of starting over:
//
//	for i := start; i < len(files); i++ {
//		if err := workflow.Heartbeat(ctx, i); err != nil {
//			return 0, err
//		}
//		copyFile(ctx, files[i])
//	}
//
// Heartbeats reset the attempt's [WithHeartbeatTimeout] at once, but are written
// to the World at most every third of the timeout (every 30s without one): the
// details of the calls in between are kept, and recorded before the attempt's
// failure if it fails. Heartbeat returns [ErrNotInStep] outside a step, the
// context's cause once the attempt was cancelled (by its heartbeat timeout, say),
// an error matching [ErrAttemptSuperseded] when the attempt is no longer the
// running one, an error matching [ErrSerialization] for details that cannot be
// encoded, and the World's error when writing failed (the details are then
// written with the next heartbeat).
func Heartbeat(ctx context.Context, details any) error {
	s, err := stepScopeFrom(ctx)
	if err != nil {
		return err
	}
	hb := s.beat
	if hb == nil {
		return ErrNotInStep
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var raw json.RawMessage
	if details != nil {
		if raw, err = encode("heartbeat details of step "+quote(hb.info.StepName), details, hb.e.maxPayload); err != nil {
			return err
		}
	}
	if hb.kick != nil {
		select {
		case hb.kick <- struct{}{}:
		default:
		}
	}
	hb.mu.Lock()
	now := hb.e.clock()
	if !hb.lastWrite.IsZero() && now.Sub(hb.lastWrite) < hb.throttle {
		if raw != nil {
			hb.pending = raw
		}
		hb.mu.Unlock()
		return nil
	}
	hb.lastWrite = now
	if raw == nil {
		raw = hb.pending
	}
	hb.pending = nil
	hb.mu.Unlock()
	err = hb.write(ctx, raw)
	if err != nil && !errors.Is(err, ErrAttemptSuperseded) {
		hb.mu.Lock()
		if hb.pending == nil {
			hb.pending = raw // send them with the next heartbeat
		}
		hb.lastWrite = time.Time{}
		hb.mu.Unlock()
	}
	return err
}

// write records one heartbeat of the attempt with details (nil: none).
func (hb *heartbeat) write(ctx context.Context, details json.RawMessage) error {
	_, err := hb.e.world.Append(ctx, hb.info.RunID, worlds.Event{Type: worlds.EventStepHeartbeat,
		CorrelationID: hb.info.StepID, Attempt: hb.info.Attempt, Payload: details})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, worlds.ErrConflict), errors.Is(err, worlds.ErrGone), errors.Is(err, worlds.ErrNotFound):
		serr := fmt.Errorf("%w: step %q attempt %d: %w", ErrAttemptSuperseded, hb.info.StepName, hb.info.Attempt, err)
		if hb.cancel != nil {
			hb.cancel(serr)
		}
		return serr
	}
	return err
}

// flush records the details of a throttled heartbeat, before the attempt's
// failure is recorded, so the next attempt reads the latest ones.
func (hb *heartbeat) flush(ctx context.Context) {
	hb.mu.Lock()
	raw := hb.pending
	hb.pending = nil
	hb.mu.Unlock()
	if raw == nil {
		return
	}
	if err := hb.write(ctx, raw); err != nil {
		hb.e.log.WarnContext(ctx, "recording a failed attempt's last heartbeat details", "run_id", hb.info.RunID,
			"step_id", hb.info.StepID, "attempt", hb.info.Attempt, "error", err)
	}
}

// HeartbeatDetails decodes, inside a step, the details of the last heartbeat an
// earlier attempt of the step recorded ([Heartbeat]), so a retried attempt can
// resume where the one before stopped. It returns [ErrNotInStep] outside a
// step, [ErrNoHeartbeatDetails] when no attempt recorded details, and an error
// matching [ErrSerialization] when they do not decode into a T.
func HeartbeatDetails[T any](ctx context.Context) (T, error) {
	var zero T
	s, err := stepScopeFrom(ctx)
	if err != nil {
		return zero, err
	}
	if s.beat == nil {
		return zero, ErrNotInStep
	}
	if len(s.beat.prev) == 0 {
		return zero, ErrNoHeartbeatDetails
	}
	var v T
	if err := json.Unmarshal(s.beat.prev, &v); err != nil {
		return zero, &SerializationError{What: "heartbeat details of step " + quote(s.beat.info.StepName), Err: err}
	}
	return v, nil
}

// timeoutError is the error an attempt fails with when its heartbeat timed out.
func heartbeatTimeoutError(info Info, timeout time.Duration) error {
	return &ApplicationError{Type: ErrorTypeHeartbeatTimeout, cause: ErrHeartbeatTimeout,
		Message: fmt.Sprintf("workflow: step %q attempt %d sent no heartbeat for %s", info.StepName, info.Attempt, timeout)}
}

// watch runs an attempt with a heartbeat timeout: it calls the step on its own
// goroutine and returns its result, or, once the timeout passes without a
// heartbeat, cancels the attempt's context and returns the timeout error
// without waiting for a step that does not heed its context (it gets a moment
// to return first). cancel cancels ctx.
func (e *engine) watch(ctx context.Context, cancel context.CancelCauseFunc, hb *heartbeat, c *captured, input json.RawMessage) (json.RawMessage, error) {
	type result struct {
		out json.RawMessage
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, err := e.callStep(ctx, hb.info, c, input)
		res <- result{out, err}
	}()
	timer := time.NewTimer(hb.timeout)
	defer timer.Stop()
	for {
		select {
		case r := <-res:
			return r.out, r.err
		case <-hb.kick:
			timer.Reset(hb.timeout)
		case <-timer.C:
			select {
			case r := <-res: // it returned just now: keep its result
				return r.out, r.err
			default:
			}
			terr := heartbeatTimeoutError(hb.info, hb.timeout)
			cancel(terr)
			grace := time.NewTimer(min(hb.timeout, time.Second))
			defer grace.Stop()
			select {
			case <-res:
			case <-grace.C:
				e.log.WarnContext(ctx, "step attempt ignored the cancellation of its heartbeat timeout; recording the timeout without it",
					"run_id", hb.info.RunID, "step_id", hb.info.StepID, "attempt", hb.info.Attempt)
			}
			return nil, terr
		}
	}
}

// heartbeatCheckID is the delivery ID of the check of attempt's heartbeat due
// at: one per deadline, so queueing it again is harmless.
func heartbeatCheckID(runID, stepID string, attempt int, at time.Time) string {
	return heartbeatCheckPrefix(runID, stepID, attempt) + strconv.FormatInt(at.UnixMilli(), 36)
}

// heartbeatCheckPrefix starts the IDs of the heartbeat checks of one attempt.
func heartbeatCheckPrefix(runID, stepID string, attempt int) string {
	return "hb-" + runID + "-" + stepID + "-" + strconv.Itoa(attempt) + "-"
}

// queueHeartbeatCheck queues a step delivery for the running attempt, due just
// after its heartbeat deadline: it records the timeout if no heartbeat came by then
// and the process running the attempt did not (it died), and otherwise queues
// itself again for the next deadline.
func (e *engine) queueHeartbeatCheck(ctx context.Context, info Info, deadline time.Time, timeout time.Duration) error {
	// A little after the deadline, so a live process records the timeout itself,
	// with the last details it holds.
	at := deadline.Add(min(timeout/2, 5*time.Second))
	_, err := e.world.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverStep, WorkflowName: info.WorkflowName, RunID: info.RunID,
		StepID: info.StepID, Attempt: info.Attempt}, worlds.QueueOptions{DueAt: at, ID: heartbeatCheckID(info.RunID, info.StepID, info.Attempt, at)})
	return err
}

// heartbeatDue reports whether step's running attempt has passed its heartbeat
// deadline at now, and that deadline.
func heartbeatDue(step worlds.Step, now time.Time) (bool, time.Time) {
	if step.Status != worlds.StepRunning || step.HeartbeatTimeout <= 0 || step.HeartbeatAt == nil {
		return false, time.Time{}
	}
	deadline := step.HeartbeatAt.Add(step.HeartbeatTimeout)
	return !now.Before(deadline), deadline
}

// heartbeatLost records that the running attempt of step, whose function is c,
// went past its heartbeat deadline: it fails, retried under the step's policy,
// guarded by its attempt number so it cannot fail a later attempt.
func (e *engine) heartbeatLost(ctx context.Context, run worlds.Run, step worlds.Step, c *captured) error {
	info := Info{RunID: run.RunID, WorkflowName: run.WorkflowName, StepID: step.StepID, StepName: step.StepName, Attempt: step.Attempt}
	e.log.WarnContext(ctx, "step attempt missed its heartbeat deadline", "run_id", run.RunID, "step_id", step.StepID, "attempt", step.Attempt)
	ev := e.failure(info, c.opts.retry, e.errs.errorInfo(heartbeatTimeoutError(info, step.HeartbeatTimeout)))
	ev.Attempt = step.Attempt
	return e.stepOutcome(ctx, ctx, info, ev, nil)
}
