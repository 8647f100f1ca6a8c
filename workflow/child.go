package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Run attributes the runtime sets to link runs. Keys starting with "cairn." are
// reserved for the runtime.
const (
	// AttrParent, on a child run, is the ID of the run that started it with
	// [StartChild].
	AttrParent = "cairn.parent"
	// AttrParentStep, on a child run, is the correlation ID of the parent's
	// operation that waits for it ("step_3").
	AttrParentStep = "cairn.parent_step"
	// AttrParentWorkflow, on a child run, is the parent's workflow name, so the
	// child's end can wake the parent on its workflow's queue.
	AttrParentWorkflow = "cairn.parent_workflow"
)

// childStepPrefix starts the step name of a [StartChild] operation, followed by
// the child's workflow name. Step names starting with "cairn." are reserved.
const childStepPrefix = "cairn.child:"

// derivedRunID returns base+suffix, or, when that would exceed worlds.MaxRunIDLength, a
// prefix of base, a hash of all of base and suffix, so IDs derived from distinct
// bases stay distinct and within the limit.
func derivedRunID(base, suffix string) string {
	if len(base)+len(suffix) <= worlds.MaxRunIDLength {
		return base + suffix
	}
	sum := sha256.Sum256([]byte(base))
	h := "-" + hex.EncodeToString(sum[:8])
	keep := max(worlds.MaxRunIDLength-len(h)-len(suffix), 0)
	return base[:keep] + h + suffix
}

// ChildRunID is the run ID [StartChild] gives the child started by the parent
// operation stepID of run parentID: parentID + "-" + stepID, shortened with a
// hash when longer than the Worlds' run ID limit (100 bytes).
func ChildRunID(parentID, stepID string) string { return derivedRunID(parentID, "-"+stepID) }

// ChildOption configures [StartChild].
type ChildOption func(*childOptions)

type childOptions struct {
	attrs        map[string]string
	detachCancel bool
}

// WithChildAttributes stores string attributes on the child run, for listings.
// Keys starting with "cairn." are reserved and rejected.
func WithChildAttributes(attrs map[string]string) ChildOption {
	return func(o *childOptions) { o.attrs = attrs }
}

// WithCancelWithParent says whether cancelling the parent with [Client.Cancel]
// also cancels the child; the default is true. A child that outlives its
// cancelled parent runs on and ends on its own.
func WithCancelWithParent(cancel bool) ChildOption {
	return func(o *childOptions) { o.detachCancel = !cancel }
}

// childSpec is the recorded input of a StartChild operation.
type childSpec struct {
	Workflow string            `json:"workflow"`
	Input    json.RawMessage   `json:"input"`
	Attrs    map[string]string `json:"attributes,omitempty"`
	// Detached: cancelling the parent leaves the child running.
	Detached bool `json:"detached,omitempty"`
}

// ChildRun is a child run started with [StartChild]. Its embedded [Future]
// resolves when the child ends: Get returns the child's output, or a *[RunError]
// (matching [ErrRunFailed] or [ErrRunCancelled]) carrying the child's persisted
// error when it failed or was cancelled, or could not be started. Pass the Future
// wherever a step's future goes.
type ChildRun[O any] struct {
	*Future[O]
	// RunID is the child's run ID, fixed by the parent's run ID and the
	// operation's position (see [ChildRunID]): the same on every replay.
	RunID string
}

// childRecord is how a child's start or end is recorded as the outcome of its
// parent's operation: the operation's attempt creates the child and leaves the
// operation running (pending), and the child's end completes it.
type childRecord struct {
	pending bool
	event   worlds.Event
}

func (c *childRecord) Error() string { return "workflow: child run started" }

// StartChild starts a durable child run of workflow w with input in and returns
// at once; the returned run's Future resolves when the child ends. The child is a
// run of its own, delivered like any other (its runner must be registered where
// the parent's deliveries run), with the attributes [AttrParent],
// [AttrParentStep] and [AttrParentWorkflow] linking it to the parent.
//
// The parent records the start as one operation in its log, so a replay finds
// the same child: the operation's first attempt creates the child run
// (creating it again after a crash returns the same run), and the child's end,
// its output or its error, is appended to the parent's log as the operation's
// outcome, which wakes the parent; nothing polls. A child that continues as new
// ([ContinueAsNew]) resolves with the end of the last run of its chain.
// Cancelling the parent with [Client.Cancel] cancels the child unless
// [WithCancelWithParent](false) is given; a parent that completes or fails
// without waiting for a child leaves it running. Cancelling the child with
// Client.Cancel resolves the Future with an error matching [ErrRunCancelled].
//
// The operation is a step named "cairn.child:" and the child's workflow name:
// observers see one attempt, which ends when the child is created; the step's
// outcome in the log is the child's end.
func StartChild[I, O any](ctx Context, w Workflow[I, O], in I, opts ...ChildOption) *ChildRun[O] {
	var o childOptions
	for _, opt := range opts {
		opt(&o)
	}
	e, err := execOf(ctx)
	if err != nil {
		return &ChildRun[O]{Future: &Future[O]{err: err}}
	}
	for k := range o.attrs {
		if strings.HasPrefix(k, "cairn.") {
			e.enter()
			return &ChildRun[O]{Future: &Future[O]{err: &ConfigError{Field: "WithChildAttributes", Value: k, Reason: `keys starting with "cairn." are reserved`}}}
		}
	}
	name := workflowName(w)
	raw, err := encode("child "+quote(name)+" input", in, e.rt.maxPayload)
	if err != nil {
		e.enter()
		return &ChildRun[O]{Future: &Future[O]{err: err}}
	}
	spec := childSpec{Workflow: name, Input: raw, Attrs: o.attrs, Detached: o.detachCancel}
	world, rt := e.world, e.rt
	start := func(ctx context.Context, spec childSpec) (string, error) {
		return "", rt.startChild(ctx, world, spec)
	}
	sf := Go(ctx, childStepPrefix+name, start, spec, WithRetry(childRetry))
	// The operation's outcome is the child's output, of type O.
	f := &Future[O]{exec: sf.exec, id: sf.id, name: sf.name, rec: sf.rec, err: sf.err}
	c := &ChildRun[O]{Future: f}
	if f.err == nil {
		c.RunID = ChildRunID(e.runID, f.id)
	}
	return c
}

// childRetry retries a child's creation after a World failure; every redelivery
// of the operation also counts as an attempt.
var childRetry = RetryPolicy{MaxAttempts: 20, InitialInterval: time.Second, MaxInterval: time.Minute, Multiplier: 2}

// startChild is the attempt of a StartChild operation: it creates the child run,
// or finds it created by an earlier attempt, and queues its first delivery. It
// returns a *childRecord: pending while the child runs, or the child's end when
// it already ended (an earlier attempt created it and the notification found
// the operation between attempts).
func (e *engine) startChild(ctx context.Context, w worlds.World, spec childSpec) error {
	info, _ := InfoFrom(ctx)
	parentID, stepID := info.RunID, info.StepID
	childID := ChildRunID(parentID, stepID)
	attrs := maps.Clone(spec.Attrs)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs[AttrParent], attrs[AttrParentStep], attrs[AttrParentWorkflow] = parentID, stepID, info.WorkflowName
	_, err := w.Append(ctx, childID, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: spec.Workflow, Input: spec.Input, Attributes: attrs})
	switch {
	case errors.Is(err, worlds.ErrRunExists):
		run, err := w.GetRun(ctx, childID)
		if err != nil {
			return err
		}
		if run.WorkflowName != spec.Workflow || run.Attributes[AttrParent] != parentID || run.Attributes[AttrParentStep] != stepID {
			return Fatal(fmt.Errorf("workflow: child run ID %s is taken by a run of %s that is not this operation's child", childID, run.WorkflowName))
		}
		if run.Status.Terminal() {
			// Ended while no attempt was running: record its end now.
			final, err := e.chainEnd(ctx, w, run)
			if err != nil {
				return err
			}
			if final.Status.Terminal() {
				return &childRecord{event: childOutcome(stepID, final)}
			}
		}
	case errors.Is(err, worlds.ErrEventInvalid):
		return Fatal(fmt.Errorf("workflow: starting child %s: %w", childID, err))
	case err != nil:
		return err
	}
	if _, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: spec.Workflow, RunID: childID},
		worlds.QueueOptions{ID: worlds.StartDeliveryID(childID)}); err != nil {
		return err
	}
	if !spec.Detached {
		// The parent may have been cancelled while this attempt ran, after its
		// cancellation looked for children to cancel: cancel the child here.
		if parent, err := w.GetRun(ctx, parentID); err == nil && parent.Status == worlds.RunCancelled {
			_ = e.cancelRun(ctx, childID, cancelReason(parent))
		}
	}
	return &childRecord{pending: true}
}

// chainEnd follows run's continue-as-new chain to its last run.
func (e *engine) chainEnd(ctx context.Context, w worlds.World, run worlds.Run) (worlds.Run, error) {
	for run.Status == worlds.RunCompleted && run.Attributes[AttrContinuedAs] != "" {
		next, err := w.GetRun(ctx, run.Attributes[AttrContinuedAs])
		if err != nil {
			return run, err
		}
		run = next
	}
	return run, nil
}

// childOutcome is the outcome of parent operation stepID for a child that ended
// as run says.
func childOutcome(stepID string, run worlds.Run) worlds.Event {
	switch run.Status {
	case worlds.RunCompleted:
		return worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: stepID, Output: run.Output}
	case worlds.RunCancelled:
		return worlds.Event{Type: worlds.EventStepFailed, CorrelationID: stepID,
			Error: &worlds.ErrorInfo{Message: cancelReason(run), Type: childCancelledType, Fatal: true}}
	}
	info := worlds.ErrorInfo{Message: "failed"}
	if run.Error != nil {
		info = *run.Error
	}
	info.Fatal = true
	return worlds.Event{Type: worlds.EventStepFailed, CorrelationID: stepID, Error: &info}
}

// childCancelledType is the ErrorInfo.Type of the outcome of a cancelled child.
const childCancelledType = "run_cancelled"

// notifyParent records the end of a child run in its parent's log and wakes the
// parent. A run without a parent, or one that continued as new (its chain's last
// run notifies), needs nothing. The parent's operation already being resolved,
// or the parent having ended, is fine.
func (e *engine) notifyParent(ctx context.Context, run worlds.Run) error {
	parentID, stepID := run.Attributes[AttrParent], run.Attributes[AttrParentStep]
	if parentID == "" || stepID == "" || !run.Status.Terminal() || run.Attributes[AttrContinuedAs] != "" {
		return nil
	}
	ev := childOutcome(stepID, run)
	_, err := e.world.Append(ctx, parentID, ev)
	if ev.Type == worlds.EventStepCompleted && errors.Is(err, worlds.ErrEventInvalid) {
		// The parent's World refused the output: the operation fails for good.
		serr := &SerializationError{What: "child run " + run.RunID + " output", Err: err}
		_, err = e.world.Append(ctx, parentID, worlds.Event{Type: worlds.EventStepFailed, CorrelationID: stepID,
			Error: &worlds.ErrorInfo{Message: serr.Error(), Fatal: true}})
	}
	switch {
	case errors.Is(err, worlds.ErrGone), errors.Is(err, worlds.ErrRunNotFound):
		return nil // the parent ended or went away
	case errors.Is(err, worlds.ErrConflict):
		// Recorded before (the wake-up may not have been queued), or the operation
		// waits for a retry, which finds the child ended: wake the parent anyway.
	case err != nil:
		return fmt.Errorf("workflow: run %s: recording its end in parent run %s: %w", run.RunID, parentID, err)
	}
	return e.queueWorkflow(ctx, run.Attributes[AttrParentWorkflow], parentID, time.Time{}, "")
}

// endedRun is the run view an execution's end ev leaves, for notifyParent.
func endedRun(run worlds.Run, ev worlds.Event) worlds.Run {
	run.Attributes = maps.Clone(run.Attributes)
	switch ev.Type {
	case worlds.EventRunCompleted:
		run.Status, run.Output = worlds.RunCompleted, ev.Output
	case worlds.EventRunFailed:
		run.Status, run.Error = worlds.RunFailed, ev.Error
	case worlds.EventRunCancelled:
		run.Status, run.CancelReason = worlds.RunCancelled, ev.Reason
	}
	return run
}

// childError is what the Future of a child started at parent operation stepID
// returns for a failed outcome.
func childError(parentID, stepID string, info worlds.ErrorInfo, reg *errorRegistry) error {
	status := worlds.RunFailed
	if info.Type == childCancelledType {
		status = worlds.RunCancelled
	}
	return &RunError{RunID: ChildRunID(parentID, stepID), Status: status, Info: info, reg: reg}
}

// cancelChildren cancels the children that parent run runID started and that
// are still running, unless they were started detached, and each one's own
// children in turn.
func (e *engine) cancelChildren(ctx context.Context, runID, reason string) error {
	var errs []error
	filter := worlds.ListFilter{Limit: worlds.MaxPageSize}
	for {
		page, err := e.world.ListSteps(ctx, runID, filter)
		if err != nil {
			return err
		}
		for _, s := range page.Items {
			if !strings.HasPrefix(s.StepName, childStepPrefix) || s.Status.Terminal() || s.Attempt == 0 {
				continue
			}
			var spec childSpec
			if err := json.Unmarshal(s.Input, &spec); err != nil || spec.Detached {
				continue
			}
			errs = append(errs, e.cancelChain(ctx, ChildRunID(runID, s.StepID), reason))
		}
		if page.Cursor == "" {
			return errors.Join(errs...)
		}
		filter.Cursor = page.Cursor
	}
}

// cancelChain cancels the run runID, or the run its continue-as-new chain went
// on to.
func (e *engine) cancelChain(ctx context.Context, runID, reason string) error {
	for range maxChain {
		err := e.cancelRun(ctx, runID, reason)
		if !errors.Is(err, worlds.ErrRunFinished) {
			if errors.Is(err, worlds.ErrRunNotFound) {
				return nil
			}
			return err
		}
		run, gerr := e.world.GetRun(ctx, runID)
		if gerr != nil || run.Attributes[AttrContinuedAs] == "" {
			return nil // it ended on its own
		}
		runID = run.Attributes[AttrContinuedAs]
	}
	return nil
}

// maxChain bounds how far a continue-as-new chain is followed at once, against
// a cycle of hand-made attributes.
const maxChain = 1 << 16

// RunLinks are the runs a run is linked to by [StartChild] and [ContinueAsNew],
// for tools that show a run (cairn inspect, the dev UI).
type RunLinks struct {
	// Parent started the run with StartChild.
	Parent string `json:"parent,omitempty"`
	// ContinuedFrom ended by continuing as this run; ContinuedAs continues it.
	ContinuedFrom string `json:"continuedFrom,omitempty"`
	ContinuedAs   string `json:"continuedAs,omitempty"`
	// Children are the runs it started with StartChild, in the order it did.
	Children []ChildLink `json:"children,omitempty"`
}

// ChildLink is a child run as its parent's log records it.
type ChildLink struct {
	RunID    string `json:"runId"`
	Workflow string `json:"workflow"`
	// StepID is the parent's operation that started and awaits the child.
	StepID string `json:"stepId"`
	// Status is that operation's: running until the child ends, then completed
	// or failed with the child's output or error. Pending means the child is
	// not created yet.
	Status worlds.StepStatus `json:"status"`
}

// Links returns the links of run, whose steps are steps (as World.ListSteps
// lists them).
func Links(run worlds.Run, steps []worlds.Step) RunLinks {
	l := RunLinks{Parent: run.Attributes[AttrParent], ContinuedFrom: run.Attributes[AttrContinuedFrom], ContinuedAs: run.Attributes[AttrContinuedAs]}
	for _, s := range steps {
		if name, ok := strings.CutPrefix(s.StepName, childStepPrefix); ok {
			l.Children = append(l.Children, ChildLink{RunID: ChildRunID(run.RunID, s.StepID), Workflow: name, StepID: s.StepID, Status: s.Status})
		}
	}
	return l
}
