package worlds

import (
	"encoding/json"
	"time"
)

// RunStatus is the lifecycle state of a run.
type RunStatus string

// Run statuses. A run is created pending, becomes running on run_started and ends
// completed, failed or cancelled.
const (
	RunPending   RunStatus = "pending"
	RunRunning   RunStatus = "running"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// Terminal reports whether s is a final status.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// Valid reports whether s is a known status.
func (s RunStatus) Valid() bool {
	switch s {
	case RunPending, RunRunning, RunCompleted, RunFailed, RunCancelled:
		return true
	}
	return false
}

// Run is the projection of a run's log: its current view.
type Run struct {
	RunID        string            `json:"runId"`
	WorkflowName string            `json:"workflowName"`
	Status       RunStatus         `json:"status"`
	Input        json.RawMessage   `json:"input,omitempty"`
	Output       json.RawMessage   `json:"output,omitempty"`
	Error        *ErrorInfo        `json:"error,omitempty"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	// CancelReason is the reason given by run_cancelled.
	CancelReason string `json:"cancelReason,omitempty"`
	// Blocked is set while the run is blocked on an error of its workflow code
	// (run_blocked), until run_unblocked or the run's end. The run's status
	// stays running meanwhile.
	Blocked     *Blocked   `json:"blocked,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	// EventCount is the number of events in the log; the next event gets Seq EventCount+1.
	// Appends are guarded by it.
	EventCount int64 `json:"eventCount"`
}

// Blocked describes a run blocked on an error of its workflow code.
type Blocked struct {
	// Error is the latest failure, with its stack.
	Error ErrorInfo `json:"error"`
	// Since is when the run was first blocked, at the first run_blocked after
	// it was last unblocked; At is the latest run_blocked.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
}

// StepStatus is the lifecycle state of a step.
type StepStatus string

// Step statuses. A step is created pending, is running while an attempt runs, goes
// back to pending (with RetryAt) after step_retrying, and ends completed or failed.
const (
	StepPending   StepStatus = "pending"
	StepRunning   StepStatus = "running"
	StepCompleted StepStatus = "completed"
	StepFailed    StepStatus = "failed"
)

// Terminal reports whether s is a final status.
func (s StepStatus) Terminal() bool { return s == StepCompleted || s == StepFailed }

// Step is the projection of one step's events.
type Step struct {
	RunID    string          `json:"runId"`
	StepID   string          `json:"stepId"` // the correlation ID
	StepName string          `json:"stepName"`
	Status   StepStatus      `json:"status"`
	Input    json.RawMessage `json:"input,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    *ErrorInfo      `json:"error,omitempty"`
	// Attempt is the number of the latest started attempt (0 before the first).
	Attempt int `json:"attempt"`
	// HeartbeatTimeout is the latest attempt's step_started HeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
	// HeartbeatAt is, for an attempt with a HeartbeatTimeout, the time of its
	// latest step_heartbeat, or of its step_started before the first: the attempt
	// counts as lost once HeartbeatTimeout has passed since.
	HeartbeatAt *time.Time `json:"heartbeatAt,omitempty"`
	// HeartbeatDetails are the details of the latest step_heartbeat of any
	// attempt that carried some, so a retried attempt can resume from them.
	HeartbeatDetails json.RawMessage `json:"heartbeatDetails,omitempty"`
	RetryAt          *time.Time      `json:"retryAt,omitempty"`
	CreatedAt        time.Time       `json:"createdAt"`
	StartedAt        *time.Time      `json:"startedAt,omitempty"` // first attempt
	CompletedAt      *time.Time      `json:"completedAt,omitempty"`
	UpdatedAt        time.Time       `json:"updatedAt"`
}

// HookStatus is the lifecycle state of a hook.
type HookStatus string

// Hook statuses. A hook is active from hook_created, may receive any number of
// payloads, and ends disposed (explicitly or when its run finishes), which releases
// its token.
const (
	HookActive   HookStatus = "active"
	HookDisposed HookStatus = "disposed"
)

// Hook is the projection of one hook's events.
type Hook struct {
	RunID        string          `json:"runId"`
	HookID       string          `json:"hookId"` // the correlation ID
	Token        string          `json:"token"`
	WorkflowName string          `json:"workflowName"`
	Status       HookStatus      `json:"status"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	// Received counts hook_received events.
	Received   int        `json:"received"`
	CreatedAt  time.Time  `json:"createdAt"`
	DisposedAt *time.Time `json:"disposedAt,omitempty"`
	UpdatedAt  time.Time  `json:"updatedAt"`
}

// ResumeContext is what a resumer needs to route a hook payload to its run.
func (h *Hook) ResumeContext() ResumeContext {
	return ResumeContext{RunID: h.RunID, HookID: h.HookID, WorkflowName: h.WorkflowName}
}

// ResumeContext identifies the run and workflow a hook belongs to, so a payload sent
// to the hook's token can be appended to the right log and delivered to the right queue.
type ResumeContext struct {
	RunID        string `json:"runId"`
	HookID       string `json:"hookId"`
	WorkflowName string `json:"workflowName"`
}

// WaitStatus is the state of a durable timer.
type WaitStatus string

// Wait statuses.
const (
	WaitWaiting   WaitStatus = "waiting"
	WaitCompleted WaitStatus = "completed"
)

// Wait is the projection of a durable timer (a workflow Sleep).
type Wait struct {
	RunID       string     `json:"runId"`
	WaitID      string     `json:"waitId"` // the correlation ID
	Status      WaitStatus `json:"status"`
	ResumeAt    time.Time  `json:"resumeAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
}

// Chunk is one element of a stream.
type Chunk struct {
	Index int    `json:"index"` // 0-based position in the stream
	Data  []byte `json:"data"`
}

// StreamInfo describes a stream of a run.
type StreamInfo struct {
	RunID     string    `json:"runId"`
	Name      string    `json:"name"`
	Chunks    int       `json:"chunks"` // number of chunks written
	Closed    bool      `json:"closed"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// StreamPage is a slice of a stream read with [World.ReadStream].
type StreamPage struct {
	Chunks []Chunk `json:"chunks"`
	// Next is the index to read from next.
	Next int `json:"next"`
	// Closed reports that the stream is closed and Next is its end: nothing more will come.
	Closed bool `json:"closed"`
}

// Page is one page of a listing. An empty Cursor means there are no more pages.
type Page[T any] struct {
	Items  []T    `json:"items"`
	Cursor string `json:"cursor,omitempty"`
}

// DefaultPageSize applies when a listing's Limit is zero; MaxPageSize caps it.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// PageLimit returns the effective page size for a requested limit, or an error
// naming the value when it is negative.
func PageLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, &ArgumentError{Field: "Limit", Value: limit, Reason: "must not be negative"}
	case limit == 0:
		return DefaultPageSize, nil
	case limit > MaxPageSize:
		return MaxPageSize, nil
	}
	return limit, nil
}

// RunFilter selects runs for [World.ListRuns]. Runs are listed newest first.
type RunFilter struct {
	WorkflowName  string    // empty: every workflow
	Status        RunStatus // empty: every status
	CreatedAfter  time.Time // zero: no lower bound (exclusive)
	CreatedBefore time.Time // zero: no upper bound (exclusive)
	// Attributes selects runs whose [Run.Attributes] hold every pair with exactly
	// that value; empty: no attribute filter. [ValidateAttributeFilter] bounds it.
	// Every World serves it from an index, so it does not scan the runs.
	Attributes map[string]string
	Limit      int
	Cursor     string
}

// HookFilter selects hooks for [World.ListHooks]. Hooks are listed newest first.
type HookFilter struct {
	RunID  string // empty: every run
	Limit  int
	Cursor string
}

// EventFilter selects events for [World.ListEvents], in log order.
type EventFilter struct {
	AfterSeq int64 // list events with Seq > AfterSeq
	Limit    int
	Cursor   string
}

// ListFilter pages through a run's steps for [World.ListSteps], in creation order.
type ListFilter struct {
	Limit  int
	Cursor string
}
