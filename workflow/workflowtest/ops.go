package workflowtest

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// OpKind is the kind of a recorded operation.
type OpKind string

// Operation kinds, as their correlation IDs begin.
const (
	OpStep  OpKind = "step"
	OpSleep OpKind = "wait"
	OpHook  OpKind = "hook"
)

// Op is one operation of a run as its log records it.
type Op struct {
	Kind OpKind
	// ID is the correlation ID ("step_1", "wait_2", "hook_3.<run ID>") and Position
	// its place in call order, from 1.
	ID       string
	Position int

	// Name, Input, Output, Error and Attempts describe a step: Output is set once
	// it completed, Error once it failed for good or while it is retrying.
	Name     string
	Input    json.RawMessage
	Output   json.RawMessage
	Error    *worlds.ErrorInfo
	Attempts int

	// ResumeAt is when a sleep is due.
	ResumeAt time.Time

	// Token, Payloads, Conflict and Disposed describe a hook: Conflict is set when
	// another hook owned its token.
	Token    string
	Payloads []json.RawMessage
	Conflict bool
	Disposed bool

	// Done is set for a step that completed or failed for good and a sleep that
	// elapsed.
	Done bool
}

// OpsOf folds a run's log into its operations, in call order. Events of other
// kinds (the run's own) are skipped.
func OpsOf(events []worlds.Event) []Op {
	byID := map[string]*Op{}
	var ops []*Op
	for _, ev := range events {
		switch ev.Type {
		case worlds.EventStepCreated, worlds.EventWaitCreated, worlds.EventHookCreated, worlds.EventHookConflict:
			kind, pos, ok := parseID(ev.CorrelationID)
			if !ok {
				continue
			}
			op := &Op{Kind: kind, ID: ev.CorrelationID, Position: pos, Name: ev.StepName, Input: ev.Input,
				Token: ev.Token, Conflict: ev.Type == worlds.EventHookConflict}
			if ev.ResumeAt != nil {
				op.ResumeAt = *ev.ResumeAt
			}
			byID[op.ID] = op
			ops = append(ops, op)
			continue
		}
		op := byID[ev.CorrelationID]
		if op == nil {
			continue
		}
		switch ev.Type {
		case worlds.EventStepStarted:
			op.Attempts = max(op.Attempts, ev.Attempt)
		case worlds.EventStepRetrying:
			op.Error = ev.Error
		case worlds.EventStepCompleted:
			op.Output, op.Error, op.Done = ev.Output, nil, true
		case worlds.EventStepFailed:
			op.Error, op.Done = ev.Error, true
		case worlds.EventWaitCompleted:
			op.Done = true
		case worlds.EventHookReceived:
			op.Payloads = append(op.Payloads, ev.Payload)
		case worlds.EventHookDisposed:
			op.Disposed = true
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Position < ops[j].Position })
	out := make([]Op, len(ops))
	for i, op := range ops {
		out[i] = *op
	}
	return out
}

// parseID reads the kind and position out of a correlation ID.
func parseID(id string) (OpKind, int, bool) {
	id, _, _ = strings.Cut(id, ".")
	k, n, ok := strings.Cut(id, "_")
	if !ok {
		return "", 0, false
	}
	pos, err := strconv.Atoi(n)
	if err != nil || pos < 1 {
		return "", 0, false
	}
	switch kind := OpKind(k); kind {
	case OpStep, OpSleep, OpHook:
		return kind, pos, true
	}
	return "", 0, false
}

// describe names an operation the way nondeterminism errors do.
func (op Op) describe() string {
	switch op.Kind {
	case OpStep:
		return "step " + strconv.Quote(op.Name)
	case OpSleep:
		return "sleep"
	}
	return "hook"
}
