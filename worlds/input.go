package worlds

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// InputValidator is implemented by a [Runner] that knows the input type of its
// workflows (workflow.Use does, from the workflow's type). Entry points that start
// runs by name (the RPC endpoint, the web UI) call it before appending run_created,
// so a wrongly shaped input is rejected with an error naming the field instead of
// failing the run later.
type InputValidator interface {
	// ValidateInput checks input for the workflow named; an error matches
	// [ErrInvalidArgument], and is an *[InputError] when it concerns one field.
	ValidateInput(workflowName string, input json.RawMessage) error
}

// InputError reports a run input that does not fit its workflow's input type,
// naming the field (a dotted path such as "items.0", or empty for the input as a
// whole). It matches [ErrInvalidArgument]. A workflow's input type can return one
// from its Validate method to name the field it rejects.
type InputError struct {
	Workflow string
	Field    string
	Reason   string
}

func (e *InputError) Error() string {
	msg := "worlds: invalid input"
	if e.Workflow != "" {
		msg += " of " + e.Workflow
	}
	if e.Field != "" {
		msg += fmt.Sprintf(": field %q", e.Field)
	}
	return msg + ": " + e.Reason
}

// Is matches [ErrInvalidArgument].
func (e *InputError) Is(target error) bool { return target == ErrInvalidArgument }

// ValidateInput checks input with the runner registered for workflowName, when
// it implements [InputValidator]. A name no runner is registered for is rejected
// with an error matching [ErrInvalidArgument].
func (s *RunnerSet) ValidateInput(workflowName string, input json.RawMessage) error {
	r, ok := s.byName[workflowName]
	if !ok {
		return &UnknownWorkflowError{Name: workflowName, Known: s.Workflows()}
	}
	if v, ok := r.(InputValidator); ok {
		return v.ValidateInput(workflowName, input)
	}
	return nil
}

// ValidateStart checks what a caller submits to start a run, before anything is
// written: the run ID (when the caller chose one), the attributes, the input's
// size, depth and numbers, and, when runners is set, that the workflow is one
// of theirs (else an *[UnknownWorkflowError] listing theirs) and, when runners
// is an [InputValidator], the input's shape. runners may be nil.
func ValidateStart(runners Runner, workflowName, runID string, input json.RawMessage, attrs map[string]string) error {
	if workflowName == "" {
		return &ArgumentError{Field: "workflowName", Value: `""`, Reason: "required"}
	}
	if runID != "" {
		if err := ValidateRunID(runID); err != nil {
			return err
		}
	}
	if err := ValidateAttributes(attrs); err != nil {
		return err
	}
	if err := ValidateJSON("input", input); err != nil {
		return err
	}
	if runners != nil && !slices.Contains(runners.Workflows(), workflowName) {
		known := slices.Clone(runners.Workflows())
		slices.Sort(known)
		return &UnknownWorkflowError{Name: workflowName, Known: known}
	}
	if v, ok := runners.(InputValidator); ok {
		if err := v.ValidateInput(workflowName, input); err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				err = &InputError{Workflow: workflowName, Reason: err.Error()}
			}
			return err
		}
	}
	return nil
}

// UnknownWorkflowError reports a start of a workflow name the deployment does
// not run: no runner is registered for it, so its run would never advance.
// Known lists the names that are, sorted. It matches [ErrInvalidArgument] and
// [ErrNoRunner].
type UnknownWorkflowError struct {
	Name  string
	Known []string
}

func (e *UnknownWorkflowError) Error() string {
	known := "none are registered"
	if len(e.Known) > 0 {
		known = "known workflows: " + strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("worlds: invalid workflowName %q: no such workflow is registered (%s)", e.Name, known)
}

// Is matches [ErrInvalidArgument] and [ErrNoRunner].
func (e *UnknownWorkflowError) Is(target error) bool {
	return target == ErrInvalidArgument || target == ErrNoRunner
}
