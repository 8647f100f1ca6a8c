package worlds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// SignalWakeID is the fixed delivery ID under which a signal wakes its run, so
// that a burst of signals to one run queues one delivery (a World turns a
// fixed ID queued again into one delivery, or one more run of it, see
// [World.Queue]).
func SignalWakeID(runID string) string { return "signal-" + runID }

// SendSignal buffers a signal named name with payload in the log of run runID
// and wakes the run, as every entry point that signals does (workflow.Signal,
// the RPC's runs.signal, the CLI). The run's code reads it with a signal
// channel of that name, in log order, whenever it asks; a signal sent before
// the code reads it, even before the run started, waits in the log. On a World
// that implements [AppendQueuer] it is one write.
//
// An unknown run returns an error matching [ErrRunNotFound]; a run that has
// ended, [ErrRunFinished]: a signal is accepted only while the run can still
// read it. An empty payload is JSON null.
func SendSignal(ctx context.Context, w World, runID, name string, payload json.RawMessage, opts ...SignalOption) error {
	ev, err := signalEvent(name, payload, opts)
	if err != nil {
		return err
	}
	if runID == "" {
		return &ArgumentError{Field: "runID", Value: `""`, Reason: "required"}
	}
	run, err := w.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.Status.Terminal() {
		return rejected(&Event{Type: EventSignalReceived, RunID: runID, CorrelationID: name}, ErrRunFinished, "run is "+string(run.Status))
	}
	if ev.Token != "" {
		if sent, err := signalSent(ctx, w, runID, ev); err != nil || sent {
			return err
		}
	}
	in := QueueInput{Kind: DeliverWorkflow, WorkflowName: run.WorkflowName, RunID: runID}
	wake := QueueOptions{ID: SignalWakeID(runID)}
	if aq, ok := w.(AppendQueuer); ok {
		_, err := aq.AppendAndQueue(ctx, runID, []Event{ev}, in, wake)
		return err
	}
	if _, err := w.Append(ctx, runID, ev); err != nil {
		return err
	}
	if _, err := w.Queue(ctx, in, wake); err != nil {
		return fmt.Errorf("worlds: signal %q stored in run %s but the run was not woken (signal again to retry): %w", name, runID, err)
	}
	return nil
}

// SignalWithStart starts run runID of workflowName with input and attrs if no
// run has that ID, with the signal in the same write as its creation, and
// otherwise signals the existing run, as [SendSignal] does. Two concurrent
// calls for one run ID start one run, and both signals reach it. It returns
// the run. An existing run of another workflow is a *[StartConflictError]
// naming workflowName; an existing run that has ended, an error matching
// [ErrRunFinished]. An existing run started with other input is signalled: the
// input only matters to the call that starts it.
func SignalWithStart(ctx context.Context, w World, runID, workflowName string, input json.RawMessage, attrs map[string]string, name string, payload json.RawMessage, opts ...SignalOption) (Run, error) {
	ev, err := signalEvent(name, payload, opts)
	if err != nil {
		return Run{}, err
	}
	if err := ValidateJSON("input", input); err != nil {
		return Run{}, err
	}
	created := Event{Type: EventRunCreated, WorkflowName: workflowName, Input: input, Attributes: attrs}
	in := QueueInput{Kind: DeliverWorkflow, WorkflowName: workflowName, RunID: runID}
	first := QueueOptions{ID: StartDeliveryID(runID)}
	if aq, ok := w.(AppendQueuer); ok {
		_, err = aq.AppendAndQueue(ctx, runID, []Event{created, ev}, in, first)
	} else if _, err = w.Append(ctx, runID, created, ev); err == nil {
		if _, qerr := w.Queue(ctx, in, first); qerr != nil {
			return Run{}, fmt.Errorf("run %s created with its signal but its first delivery was not queued (start it again with the same run ID and input): %w", runID, qerr)
		}
	}
	switch {
	case err == nil:
		return w.GetRun(ctx, runID)
	case !errors.Is(err, ErrRunExists):
		return Run{}, err
	}
	run, err := w.GetRun(ctx, runID)
	if err != nil {
		return Run{}, fmt.Errorf("run %s already exists and cannot be read to signal it: %w", runID, err)
	}
	if run.WorkflowName != workflowName {
		return Run{}, &StartConflictError{RunID: runID, Field: "workflowName", Existing: run.WorkflowName, Given: workflowName}
	}
	if err := SendSignal(ctx, w, runID, name, payload, opts...); err != nil {
		return run, err
	}
	return w.GetRun(ctx, runID)
}

// SignalOption configures [SendSignal] and [SignalWithStart].
type SignalOption func(*signalOptions)

type signalOptions struct{ id string }

// WithSignalID names the signal, for senders that may send it again (a
// redelivered message, a retried request): a signal whose name and ID are
// already in the run's log is not appended again, and the call succeeds. The
// check reads the run's log, so it costs reads in proportion to its length;
// two calls with one ID at the same instant may both append. The ID is stored
// as the event's Token, 1 to MaxTokenLength bytes.
func WithSignalID(id string) SignalOption { return func(o *signalOptions) { o.id = id } }

// signalSent reports whether the log of runID holds ev's signal already.
func signalSent(ctx context.Context, w World, runID string, ev Event) (bool, error) {
	evs, err := AllEvents(ctx, w, runID)
	if err != nil {
		return false, err
	}
	for _, e := range evs {
		if e.Type == EventSignalReceived && e.CorrelationID == ev.CorrelationID && e.Token == ev.Token {
			return true, nil
		}
	}
	return false, nil
}

// signalEvent validates a signal and returns its event.
func signalEvent(name string, payload json.RawMessage, opts []SignalOption) (Event, error) {
	var o signalOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if len(o.id) > MaxTokenLength {
		return Event{}, &ArgumentError{Field: "WithSignalID", Value: len(o.id), Reason: fmt.Sprintf("longer than %d bytes", MaxTokenLength)}
	}
	if name == "" || len(name) > MaxSignalNameLength {
		return Event{}, &ArgumentError{Field: "name", Value: name, Reason: fmt.Sprintf("a signal name must be 1 to %d bytes", MaxSignalNameLength)}
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if err := ValidateJSON("payload", payload); err != nil {
		return Event{}, err
	}
	return Event{Type: EventSignalReceived, CorrelationID: name, Payload: payload, Token: o.id}, nil
}
