package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Run attributes of a continue-as-new chain.
const (
	// AttrContinuedAs, on a run that ended with [ContinueAsNew], is the ID of the
	// run that continues it.
	AttrContinuedAs = "cairn.continued_as"
	// AttrContinuedFrom, on a run started by [ContinueAsNew], is the ID of the run
	// it continues.
	AttrContinuedFrom = "cairn.continued_from"
	// AttrChain, on a run started by [ContinueAsNew], is the ID of the first run
	// of its chain.
	AttrChain = "cairn.chain"
	// AttrGeneration, on a run started by [ContinueAsNew], counts the runs before
	// it in its chain (1 for the first continuation).
	AttrGeneration = "cairn.generation"
)

// ContinueAsNewError ends a run and starts a fresh run of the same workflow with
// Input; [ContinueAsNew] returns it for the workflow's Run method to return.
type ContinueAsNewError struct {
	// Input is the next run's input, as JSON.
	Input json.RawMessage
}

func (e *ContinueAsNewError) Error() string {
	return "workflow: continue as new (return this error from the workflow's Run method)"
}

// ContinueAsNew ends the run and starts a fresh run of the same workflow with
// input in and an empty history, so a workflow that loops for months keeps its
// log, and the cost of replaying it, bounded. Return its result from the
// workflow's Run method:
//
//	if n%1000 == 0 {
//		return 0, workflow.ContinueAsNew(ctx, state)
//	}
//
// It returns a *[ContinueAsNewError]; an error matching [ErrSerialization]
// when in cannot be encoded; and a *[ContinueAsNewInputError] (matching
// [ErrInputType]) when in does not fit the workflow's input type: it is neither
// of a type assignable to it nor JSON that decodes into it, so the next run
// could not read it. Nothing is recorded in either case; [ContinueAs] makes the
// compiler check the type instead. The run ends completed, with the attribute
// [AttrContinuedAs] naming the next run and an output of {"continuedAs": ID};
// the next run carries [AttrContinuedFrom], [AttrChain], [AttrGeneration] and
// the run's other attributes, including a child's link to its parent, but not
// its [Version] records (a new run takes the code's newest version of each
// change) nor a cancel reason. Its ID is
// derived from the chain's first run ID ("<first>-cont-<generation>"), so a
// crash while continuing starts the same run. [Run.Result] and [Client.Wait]
// follow the chain to its last run; a child that continues as new resolves its
// parent's future with the last run's end.
func ContinueAsNew[I any](ctx Context, in I) error {
	e, err := execOf(ctx)
	if err != nil {
		return err
	}
	e.enter()
	raw, err := encode("continue-as-new input", in, e.rt.maxPayload)
	if err != nil {
		return err
	}
	if err := e.fitsInput(reflect.TypeFor[I](), raw); err != nil {
		return err
	}
	return &ContinueAsNewError{Input: raw}
}

// ContinueAs is [ContinueAsNew] tied to the workflow type W, so the compiler
// checks in against W's input type:
//
//	func (Loop) Run(ctx workflow.Context, n int) (int, error) {
//		...
//		return 0, workflow.ContinueAs[Loop](ctx, n+1) // "one" does not compile
//	}
//
// W must be the running workflow (its runs recorded under the same name,
// [worlds.WorkflowName]); otherwise it returns a *[ContinueAsNewInputError]
// and records nothing, as continue-as-new always starts the same workflow.
func ContinueAs[W Workflow[I, O], I, O any](ctx Context, in I) error {
	e, err := execOf(ctx)
	if err != nil {
		return err
	}
	e.enter()
	if name := worlds.WorkflowName[W](); name != e.wfName {
		return &ContinueAsNewInputError{Workflow: e.wfName, Want: e.wfName, Got: name,
			Reason: "continue-as-new starts the running workflow, not another one"}
	}
	return ContinueAsNew(ctx, in)
}

// ErrInputType: a value given as a workflow's input does not fit its input type.
var ErrInputType = errors.New("workflow: input does not fit the workflow's input type")

// ContinueAsNewInputError is what [ContinueAsNew] and [ContinueAs] return for an
// input the next run could not decode, or for a workflow type that is not the
// running one. It matches [ErrInputType].
type ContinueAsNewInputError struct {
	// Workflow is the running workflow's name.
	Workflow string
	// Want is the workflow's input type (for ContinueAs of another workflow,
	// its name); Got is the type (or workflow name) given.
	Want, Got string
	// Reason says why they do not fit.
	Reason string
}

func (e *ContinueAsNewInputError) Error() string {
	return fmt.Sprintf("workflow: continue-as-new of %s: %s does not fit %s: %s", e.Workflow, e.Got, e.Want, e.Reason)
}

// Is matches [ErrInputType].
func (e *ContinueAsNewInputError) Is(target error) bool { return target == ErrInputType }

// fitsInput checks a continue-as-new input of static type got, encoded as raw,
// against the running workflow's input type: a type assignable to it fits, and
// so does JSON that decodes into it without unknown fields, such as an untyped
// constant's int for an int64 input.
func (e *execution) fitsInput(got reflect.Type, raw json.RawMessage) error {
	if e.flow == nil {
		return nil
	}
	want := e.flow.inputType()
	if got.AssignableTo(want) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(reflect.New(want).Interface()); err != nil {
		return &ContinueAsNewInputError{Workflow: e.wfName, Want: want.String(), Got: got.String(), Reason: err.Error()}
	}
	return nil
}

// continuation is the next run of a chain.
type continuation struct {
	id    string
	attrs map[string]string
}

// nextRun derives the run that continues run.
func nextRun(run worlds.Run) continuation {
	root := run.Attributes[AttrChain]
	if root == "" {
		root = run.RunID
	}
	gen, _ := strconv.Atoi(run.Attributes[AttrGeneration])
	gen++
	attrs := map[string]string{}
	for k, v := range run.Attributes {
		if k != AttrContinuedAs && k != "cancel_reason" && !strings.HasPrefix(k, AttrVersionPrefix) && !resetOnly(k) {
			attrs[k] = v
		}
	}
	attrs[AttrContinuedFrom], attrs[AttrChain], attrs[AttrGeneration] = run.RunID, root, strconv.Itoa(gen)
	return continuation{id: derivedRunID(root, "-cont-"+strconv.Itoa(gen)), attrs: attrs}
}

// continueAsNew creates the run that continues run with input, or finds it
// created by an earlier delivery, and returns the events that end run. The next
// run's first delivery is queued once run has ended ([engine.continued]), so a
// run that is cancelled meanwhile does not go on.
func (e *engine) continueAsNew(ctx context.Context, run worlds.Run, input json.RawMessage) ([]worlds.Event, error) {
	next := nextRun(run)
	_, err := e.world.Append(ctx, next.id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: run.WorkflowName, Input: input, Attributes: next.attrs})
	if errors.Is(err, worlds.ErrRunExists) {
		got, gerr := e.world.GetRun(ctx, next.id)
		if gerr != nil {
			return nil, gerr
		}
		if got.WorkflowName != run.WorkflowName || got.Attributes[AttrContinuedFrom] != run.RunID {
			return nil, fmt.Errorf("workflow: run ID %s, which continues run %s, is taken by another run", next.id, run.RunID)
		}
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("workflow: run %s: starting the run that continues it: %w", run.RunID, err)
	}
	out, _ := json.Marshal(map[string]string{"continuedAs": next.id})
	return []worlds.Event{
		{Type: worlds.EventAttributesSet, Attributes: map[string]string{AttrContinuedAs: next.id}},
		{Type: worlds.EventRunCompleted, Output: out},
	}, nil
}

// continued queues the first delivery of the run that continues run, if it
// continued as new, once run has ended; and cancels that run when run was
// cancelled before its end was stored.
func (e *engine) continued(ctx context.Context, run worlds.Run) error {
	next := run.Attributes[AttrContinuedAs]
	if next == "" || run.Status != worlds.RunCompleted {
		return nil
	}
	return e.queueWorkflow(ctx, run.WorkflowName, next, time.Time{}, worlds.StartDeliveryID(next))
}

// abandonContinuation cancels the run created to continue run when run ended
// some other way (it was cancelled while continuing), so the new run does not
// sit pending for ever. The error reports a continuation that may exist but
// could not be read or cancelled.
func (e *engine) abandonContinuation(ctx context.Context, run worlds.Run) error {
	next := nextRun(run)
	// A concurrent delivery of the run (a duplicate message) may have ended it
	// by continuing as this very run: that continuation is the chain's, not
	// abandoned, and that delivery queues its start.
	cur, err := e.world.GetRun(ctx, run.RunID)
	if errors.Is(err, worlds.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workflow: run %s: reading it to tell whether its continuation was abandoned: %w", run.RunID, err)
	}
	if cur.Status == worlds.RunCompleted && cur.Attributes[AttrContinuedAs] == next.id {
		return nil
	}
	got, err := e.world.GetRun(ctx, next.id)
	if errors.Is(err, worlds.ErrRunNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workflow: run %s: reading its abandoned continuation: %w", run.RunID, err)
	}
	if got.Status != worlds.RunPending || got.Attributes[AttrContinuedFrom] != run.RunID {
		return nil
	}
	if err := e.cancelRun(ctx, next.id, "the run it continues ended before continuing"); err != nil && !errors.Is(err, worlds.ErrRunFinished) {
		e.log.WarnContext(ctx, "cancelling an abandoned continuation", "run_id", next.id, "error", err)
		return err
	}
	return nil
}

// isContinuation reports whether err asks for continue-as-new.
func isContinuation(err error) (*ContinueAsNewError, bool) {
	var c *ContinueAsNewError
	if errors.As(err, &c) && c != nil {
		return c, true
	}
	return nil, false
}
