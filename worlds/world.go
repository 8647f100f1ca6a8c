package worlds

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// World stores workflow runs as event logs and delivers queued work. Every method
// is safe for concurrent use by many goroutines and, for shared backends, by many
// processes.
type World interface {
	// Append validates events against the run's current state with [Transition] and
	// appends them to the log of runID in one atomic write, together with the
	// projections they change. It assigns RunID, Seq and CreatedAt and returns the
	// events as stored: a hook_created whose token another active hook owns is stored
	// as hook_conflict instead. Concurrent appends to one run are serialized by the
	// run's event count; a World re-reads and retries internally when it loses the race
	// and returns an error wrapping [ErrAppendContention] only after bounded retries.
	// A rejected event fails the whole append with an *[EventError].
	Append(ctx context.Context, runID string, events ...Event) ([]Event, error)

	// GetRun returns the run view, or an error matching [ErrRunNotFound].
	GetRun(ctx context.Context, runID string) (Run, error)
	// ListRuns lists runs newest first.
	ListRuns(ctx context.Context, filter RunFilter) (Page[Run], error)
	// ListEvents lists a run's events in log order; [ErrRunNotFound] for an unknown run.
	ListEvents(ctx context.Context, runID string, filter EventFilter) (Page[Event], error)
	// GetStep returns one step, or an error matching [ErrStepNotFound].
	GetStep(ctx context.Context, runID, stepID string) (Step, error)
	// ListSteps lists a run's steps in creation order.
	ListSteps(ctx context.Context, runID string, filter ListFilter) (Page[Step], error)
	// GetHook returns a hook by ID, or an error matching [ErrHookNotFound]. Hook IDs
	// (the correlation IDs of hook events) are unique across all runs of a World, not
	// only within a run: runtimes derive them from the run ID.
	GetHook(ctx context.Context, hookID string) (Hook, error)
	// GetHookByToken returns the active hook owning token, or an error matching
	// [ErrHookNotFound].
	GetHookByToken(ctx context.Context, token string) (Hook, error)
	// ListHooks lists hooks newest first.
	ListHooks(ctx context.Context, filter HookFilter) (Page[Hook], error)
	// GetWait returns a durable timer, or an error matching [ErrWaitNotFound].
	GetWait(ctx context.Context, runID, waitID string) (Wait, error)

	// WriteStream appends chunks to the named stream of a run, creating it on first
	// write, and returns the index of the first chunk written. Writing to a closed
	// stream fails with [ErrStreamClosed]; to a finished run with [ErrRunFinished].
	WriteStream(ctx context.Context, runID, name string, chunks ...[]byte) (int, error)
	// CloseStream closes a stream; closing a closed stream is a no-op, closing a
	// stream never written creates it closed and empty.
	CloseStream(ctx context.Context, runID, name string) error
	// ReadStream returns up to limit chunks from index from. It never blocks:
	// readers poll, or subscribe where the World implements [StreamNotifier].
	ReadStream(ctx context.Context, runID, name string, from, limit int) (StreamPage, error)
	// ListStreams lists a run's streams by name.
	ListStreams(ctx context.Context, runID string) ([]StreamInfo, error)

	// Queue records a delivery and publishes it to the queue of its workflow, due at
	// opts.DueAt (now when zero). With opts.ID set the delivery ID is that ID, so a
	// caller retrying after a failure queues the delivery again instead of twice
	// where the World can tell. It returns the delivery ID.
	Queue(ctx context.Context, in QueueInput, opts QueueOptions) (string, error)

	// Capabilities says which optional behaviour this World has, so the conformance
	// suite and the runtime can adapt.
	Capabilities() Capabilities
}

// StreamNotifier is implemented by Worlds that can push stream activity to
// in-process readers. Subscribe returns a channel that receives a value (possibly
// coalesced) after each write or close of the stream, and a function to stop.
// Readers subscribe first and then read the backlog, so no chunk is missed; they
// de-duplicate by index.
type StreamNotifier interface {
	SubscribeStream(runID, name string) (<-chan struct{}, func())
}

// RunNotifier is implemented by Worlds that can tell in-process waiters that a
// run has ended. SubscribeRun returns a channel that receives a value (possibly
// coalesced) once an append through this World ends the run, and a function to
// stop. Waiters subscribe first and then read the run, so no end is missed;
// an end written by another process is seen only by reading the run again, so
// waiters keep polling, less often. workflow.Client.Wait and Run.Result use it.
type RunNotifier interface {
	SubscribeRun(runID string) (<-chan struct{}, func())
}

// Server is implemented by Worlds that execute their own deliveries in-process
// (the embedded World). Serve runs deliveries with runner until ctx ends.
type Server interface {
	Serve(ctx context.Context, runner Runner) error
}

// DeliveryCanceller is implemented by Worlds that can withdraw a queued delivery
// before it runs: the workflow runtime calls it for the wake-up of a cancelled
// timer (one that lost a workflow.Select, recorded as a wait_completed with Reason
// [WaitCancelled]), so a wake-up scheduled months ahead does not stay behind in the
// World's queue or scheduler.
//
// From the runtime's view it is best effort: the wait is already completed in the
// log, so a delivery that was not withdrawn (the World lacks this interface, the
// call failed, or a worker had already taken the delivery) still arrives, replays
// the run and finds nothing to do.
type DeliveryCanceller interface {
	// CancelDelivery deletes the pending delivery queued under id (the
	// [QueueOptions.ID] it was queued with), and whatever the World keeps to publish
	// it later, unless a worker is executing it: a running delivery is left to
	// finish, or to be retried if it fails. An unknown or already delivered id is
	// not an error, so a retried call is harmless. An id the World could never have
	// queued is an *[ArgumentError].
	CancelDelivery(ctx context.Context, id string) error
}

// AppendQueuer is an optional World capability: appending events and queueing
// a delivery in one atomic write, where Append then Queue are two. [StartRun]
// uses it to create a run and queue its first delivery at the cost of one
// write, and a World whose log and queue share a store (the embedded World's
// SQLite file) implements it. The AWS World does not: its queue record would
// have to join the append's DynamoDB transaction, where every item costs two
// write units instead of the one its own conditional write costs, and the
// message is sent to SQS after either way. StartRun then makes the two writes,
// retry-safe as its doc says.
type AppendQueuer interface {
	// AppendAndQueue appends events to runID's log exactly as Append does and,
	// in the same write, queues in as Queue does with opts: either both are
	// written or neither is. It returns Append's stored events, and Append's
	// errors (a refused append queues nothing) or Queue's (an invalid delivery
	// appends nothing).
	AppendAndQueue(ctx context.Context, runID string, events []Event, in QueueInput, opts QueueOptions) ([]Event, error)
}

// EagerStarter is an optional capability of a World that runs its own
// deliveries ([Server]): starting a run by running its first delivery at once,
// in this process, on a worker its Serve has free. The run's creation then goes
// out with the first write of that delivery (run_started with the first
// step's creation and start), one write where [StartRun] otherwise makes two:
// one to create and queue the run, one when a worker takes the delivery. The
// delivery is claimed as a worker claims one, so if the process dies while it
// runs, it runs again once its lease ends, exactly as a claimed delivery does.
// The embedded World implements it; [StartRun] uses it where it can.
type EagerStarter interface {
	// StartEager creates in.RunID with created (a run_created event) and runs
	// the run's first delivery, in (a DeliverWorkflow of created's workflow,
	// queued under the ID StartRun uses, [StartDeliveryID]), in this process.
	// It returns once the run exists, with true; the delivery goes on. It
	// returns false having written nothing when no Serve of the World runs the
	// workflow or none has a free worker, or when the delivery ended without
	// creating the run (the run existed already, for one): the caller then
	// starts the run as StartRun does without it. An error means the outcome
	// is unknown, as after a lost answer: start again with the same run ID. A
	// delivery that cannot be the run's first is an *[ArgumentError].
	StartEager(ctx context.Context, in QueueInput, created Event) (bool, error)
}

// Capabilities lists what a World supports beyond the required contract.
type Capabilities struct {
	// Retention: finished runs expire after a configured time.
	Retention bool
	// LiveStreams: the World implements [StreamNotifier].
	LiveStreams bool
	// MaxDelay is the longest delay Queue accepts; zero means unlimited.
	MaxDelay time.Duration
	// MaxStreamWrite is the most chunks one WriteStream call accepts; zero means unlimited.
	MaxStreamWrite int
	// MaxItemBytes is the largest stored item (event, step, chunk); zero means unlimited.
	MaxItemBytes int
}

// DeliveryKind says what a delivery asks a worker to do.
type DeliveryKind string

// Delivery kinds.
const (
	// DeliverWorkflow replays the run's workflow code from its log and advances it to
	// its next suspension point.
	DeliverWorkflow DeliveryKind = "workflow"
	// DeliverStep runs one attempt of a step.
	DeliverStep DeliveryKind = "step"
	// DeliverExpire deletes a finished run whose retention has ended.
	DeliverExpire DeliveryKind = "expire"
)

// QueueInput is the body of a delivery.
type QueueInput struct {
	Kind DeliveryKind `json:"kind"`
	// WorkflowName routes the delivery to its workflow's queue and runner.
	WorkflowName string `json:"workflowName"`
	RunID        string `json:"runId"`
	// StepID names the step of a DeliverStep delivery.
	StepID string `json:"stepId,omitempty"`
	// Attempt is, for a DeliverStep delivery, the step attempt it is meant to start,
	// so a duplicate of an attempt already running can be told from a redelivery
	// after a worker died. Zero means unspecified.
	Attempt int `json:"attempt,omitempty"`
	// Trace carries W3C trace context (traceparent, tracestate) so a resumed run's
	// spans can link to the span that queued it.
	Trace map[string]string `json:"trace,omitempty"`
}

// Validate checks the fields a World needs to route and store the delivery.
func (in QueueInput) Validate() error {
	switch in.Kind {
	case DeliverWorkflow, DeliverExpire:
	case DeliverStep:
		if in.StepID == "" {
			return &ArgumentError{Field: "QueueInput.StepID", Value: in.StepID, Reason: "required for a step delivery"}
		}
	default:
		return &ArgumentError{Field: "QueueInput.Kind", Value: in.Kind, Reason: "unknown delivery kind"}
	}
	if in.RunID == "" {
		return &ArgumentError{Field: "QueueInput.RunID", Value: in.RunID, Reason: "required"}
	}
	if in.WorkflowName == "" && in.Kind != DeliverExpire {
		return &ArgumentError{Field: "QueueInput.WorkflowName", Value: in.WorkflowName, Reason: "required to route the delivery"}
	}
	return nil
}

// QueueOptions tune one [World.Queue] call.
type QueueOptions struct {
	// DueAt is when the delivery should run; zero means now.
	DueAt time.Time
	// ID fixes the delivery ID, making a retried Queue call idempotent where the
	// World can tell. Empty: the World generates one.
	ID string
}

// Delivery is a queued [QueueInput] as a worker receives it.
type Delivery struct {
	ID    string     `json:"id"`
	Input QueueInput `json:"input"`
	DueAt time.Time  `json:"dueAt"`
	// Attempt counts receives of this delivery, starting at 1.
	Attempt int `json:"attempt"`
}

// MarshalQueueInput encodes a delivery body; UnmarshalQueueInput decodes and
// validates one, so every World parses message bodies the same way.
func MarshalQueueInput(in QueueInput) ([]byte, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(in)
}

// UnmarshalQueueInput decodes and validates a delivery body. A body that is not a
// queue message returns an error matching [ErrInvalidArgument].
func UnmarshalQueueInput(body []byte) (QueueInput, error) {
	var in QueueInput
	if err := json.Unmarshal(body, &in); err != nil {
		return QueueInput{}, fmt.Errorf("%w: queue message body: %v", ErrInvalidArgument, err)
	}
	if err := in.Validate(); err != nil {
		return QueueInput{}, err
	}
	return in, nil
}
