package worlds

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventType names what an [Event] records. The values are persisted and stable.
type EventType string

// The event types. Run events carry no correlation ID; step, hook and wait events
// carry the step, hook or wait ID as their correlation ID.
const (
	EventRunCreated   EventType = "run_created"   // WorkflowName, Input, Attributes
	EventRunStarted   EventType = "run_started"   // -
	EventRunCompleted EventType = "run_completed" // Output
	EventRunFailed    EventType = "run_failed"    // Error
	EventRunCancelled EventType = "run_cancelled" // Reason

	EventStepCreated   EventType = "step_created"   // StepName, Input
	EventStepStarted   EventType = "step_started"   // Attempt
	EventStepCompleted EventType = "step_completed" // Output
	EventStepFailed    EventType = "step_failed"    // Error (fatal, or attempts exhausted)
	EventStepRetrying  EventType = "step_retrying"  // Error, RetryAt
	// EventStepHeartbeat records that the running attempt Attempt of a step is
	// alive, with its latest progress details (Payload, optional).
	EventStepHeartbeat EventType = "step_heartbeat" // Attempt, Payload

	EventHookCreated  EventType = "hook_created"  // Token, Metadata
	EventHookConflict EventType = "hook_conflict" // Token (written instead of hook_created when another hook owns it)
	EventHookReceived EventType = "hook_received" // Payload
	EventHookDisposed EventType = "hook_disposed" // -

	EventWaitCreated   EventType = "wait_created"   // ResumeAt
	EventWaitCompleted EventType = "wait_completed" // Reason: "" or WaitCancelled

	// EventAttributesSet merges Attributes into the run's attributes. It may
	// carry a correlation ID, which names the workflow.UpsertAttributes call it
	// records, so a replay knows the call is recorded already.
	EventAttributesSet EventType = "attributes_set" // Attributes (merged into the run's attributes)

	// EventSignalReceived buffers a signal sent to the run: its correlation ID is
	// the signal's name, Payload its value. A run accepts signals from its
	// creation until it ends; its code reads them in log order.
	EventSignalReceived EventType = "signal_received" // Payload, Token (the sender's signal ID, optional)

	// EventRunBlocked records that the run's workflow code failed (a panic, a
	// divergence from the log, a goroutine that did not yield) while the run
	// goes on: it stays running, with [Run.Blocked] set, until its code gets
	// past the failure, after a deploy of fixed code.
	EventRunBlocked EventType = "run_blocked" // Error (with Stack)
	// EventRunUnblocked records that the workflow code of a blocked run ran
	// without failing again; it clears [Run.Blocked].
	EventRunUnblocked EventType = "run_unblocked" // -
)

// WaitCancelled is the Reason of a wait_completed that cancels a timer before it is
// due (a timer that lost a workflow.Select). Unlike a plain wait_completed it is
// accepted before the wait's ResumeAt; the wait is completed either way.
const WaitCancelled = "cancelled"

// EventTypes lists every event type, in a stable order.
var EventTypes = []EventType{
	EventRunCreated, EventRunStarted, EventRunCompleted, EventRunFailed, EventRunCancelled,
	EventStepCreated, EventStepStarted, EventStepCompleted, EventStepFailed, EventStepRetrying, EventStepHeartbeat,
	EventHookCreated, EventHookConflict, EventHookReceived, EventHookDisposed,
	EventWaitCreated, EventWaitCompleted,
	EventAttributesSet,
	EventRunBlocked, EventRunUnblocked,
	EventSignalReceived,
}

// Valid reports whether t is one of [EventTypes].
func (t EventType) Valid() bool {
	for _, v := range EventTypes {
		if v == t {
			return true
		}
	}
	return false
}

// Correlated reports whether events of type t must carry a correlation ID.
func (t EventType) Correlated() bool {
	switch t {
	case EventRunCreated, EventRunStarted, EventRunCompleted, EventRunFailed, EventRunCancelled, EventAttributesSet,
		EventRunBlocked, EventRunUnblocked:
		return false
	}
	return true
}

// Event is one entry of a run's log. Callers of [World.Append] fill Type,
// CorrelationID and the payload fields the type uses; the World assigns RunID, Seq
// and CreatedAt. Unused payload fields must be left zero.
type Event struct {
	RunID         string    `json:"runId"`
	Seq           int64     `json:"seq"` // 1-based position in the run's log
	Type          EventType `json:"type"`
	CorrelationID string    `json:"correlationId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`

	WorkflowName string          `json:"workflowName,omitempty"` // run_created
	StepName     string          `json:"stepName,omitempty"`     // step_created
	Input        json.RawMessage `json:"input,omitempty"`        // run_created, step_created
	Output       json.RawMessage `json:"output,omitempty"`       // run_completed, step_completed
	Error        *ErrorInfo      `json:"error,omitempty"`        // run_failed, step_failed, step_retrying, run_blocked
	Attempt      int             `json:"attempt,omitempty"`      // step_started, step_heartbeat; step_retrying and step_failed: the attempt they end, when given
	DeliveryID   string          `json:"deliveryId,omitempty"`   // step_started: the delivery running the attempt inline, if any
	// HeartbeatTimeout, on step_started, is how long the attempt may go without
	// a step_heartbeat before it counts as lost; zero means no limit.
	HeartbeatTimeout time.Duration     `json:"heartbeatTimeout,omitempty"`
	RetryAt          *time.Time        `json:"retryAt,omitempty"`    // step_retrying
	ResumeAt         *time.Time        `json:"resumeAt,omitempty"`   // wait_created
	Token            string            `json:"token,omitempty"`      // hook_created, hook_conflict; signal_received: the signal's ID
	Metadata         json.RawMessage   `json:"metadata,omitempty"`   // hook_created
	Payload          json.RawMessage   `json:"payload,omitempty"`    // hook_received, signal_received
	Attributes       map[string]string `json:"attributes,omitempty"` // run_created, attributes_set
	Reason           string            `json:"reason,omitempty"`     // run_cancelled; wait_completed ("" or WaitCancelled)
}

// ErrorInfo is the persisted form of an error raised by workflow or step code.
type ErrorInfo struct {
	Message string `json:"message"`
	// Type is the error's stable type name: the name of an application error or
	// of a registered error type, else the Go type of the innermost error that is
	// not a plain wrapper (such as fmt.Errorf's %w). Logs written by earlier
	// versions may hold the Go type of the outermost error.
	Type string `json:"type,omitempty"`
	// Details is the error's JSON payload: an application error's details, or a
	// registered error type's value, so workflow code can read it back.
	Details json.RawMessage `json:"details,omitempty"`
	// Fatal marks an error that stopped retries.
	Fatal bool `json:"fatal,omitempty"`
	// Stack is an optional stack trace of the failure.
	Stack string `json:"stack,omitempty"`
}

// Error implements error so a persisted failure can be returned as one.
func (e *ErrorInfo) Error() string { return e.Message }

// MaxSignalNameLength bounds signal names.
const MaxSignalNameLength = 128

// MaxTokenLength bounds hook tokens; longer tokens are rejected as invalid events.
const MaxTokenLength = 512

// Validate checks the shape of an event as a caller submits it: a known type, the
// correlation ID its type requires, and the payload fields its type needs. It does
// not look at the run's state; [Transition] does that.
func (e *Event) Validate() error {
	if !e.Type.Valid() {
		return invalid(e, "type", fmt.Sprintf("unknown event type %q", e.Type))
	}
	if e.Type.Correlated() && e.CorrelationID == "" {
		return invalid(e, "correlationId", "required for "+string(e.Type))
	}
	if !e.Type.Correlated() && e.CorrelationID != "" && e.Type != EventAttributesSet {
		return invalid(e, "correlationId", "must be empty for "+string(e.Type))
	}
	if len(e.CorrelationID) > 256 {
		return invalid(e, "correlationId", "longer than 256 bytes")
	}
	for name, raw := range map[string]json.RawMessage{"input": e.Input, "output": e.Output, "metadata": e.Metadata, "payload": e.Payload} {
		if len(raw) > 0 && !json.Valid(raw) {
			return invalid(e, name, "not valid JSON")
		}
	}
	switch e.Type {
	case EventRunCreated:
		if e.WorkflowName == "" {
			return invalid(e, "workflowName", "required for run_created")
		}
	case EventRunFailed, EventStepFailed, EventStepRetrying, EventRunBlocked:
		if e.Error == nil {
			return invalid(e, "error", "required for "+string(e.Type))
		}
		if d := e.Error.Details; len(d) > 0 && !json.Valid(d) {
			return invalid(e, "error.details", "not valid JSON")
		}
		if e.Type == EventStepRetrying && e.RetryAt == nil {
			return invalid(e, "retryAt", "required for step_retrying")
		}
	case EventStepCreated:
		if e.StepName == "" {
			return invalid(e, "stepName", "required for step_created")
		}
	case EventStepStarted, EventStepHeartbeat:
		if e.Attempt < 1 {
			return invalid(e, "attempt", fmt.Sprintf("must be >= 1, got %d", e.Attempt))
		}
		if e.HeartbeatTimeout < 0 {
			return invalid(e, "heartbeatTimeout", fmt.Sprintf("must not be negative, got %s", e.HeartbeatTimeout))
		}
	case EventHookCreated, EventHookConflict:
		if e.Token == "" {
			return invalid(e, "token", "required for "+string(e.Type))
		}
		if len(e.Token) > MaxTokenLength {
			return invalid(e, "token", fmt.Sprintf("longer than %d bytes", MaxTokenLength))
		}
	case EventWaitCreated:
		if e.ResumeAt == nil {
			return invalid(e, "resumeAt", "required for wait_created")
		}
	case EventWaitCompleted:
		// Reason is free text on run_cancelled, but on wait_completed it changes the
		// transition: only the values the contract defines are accepted.
		if e.Reason != "" && e.Reason != WaitCancelled {
			return invalid(e, "reason", fmt.Sprintf("must be empty or %q for wait_completed, got %q", WaitCancelled, e.Reason))
		}
	case EventAttributesSet:
		if len(e.Attributes) == 0 {
			return invalid(e, "attributes", "required for attributes_set")
		}
	case EventSignalReceived:
		if len(e.CorrelationID) > MaxSignalNameLength {
			return invalid(e, "correlationId", fmt.Sprintf("signal name longer than %d bytes", MaxSignalNameLength))
		}
	}
	return nil
}

func invalid(e *Event, field, reason string) error {
	return &EventError{Kind: ErrEventInvalid, RunID: e.RunID, Type: e.Type, CorrelationID: e.CorrelationID, Field: field, Reason: reason}
}
