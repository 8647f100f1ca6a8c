package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-go/cairn/worlds"
)

// InputValidator is implemented by workflow input types that check their own
// values beyond their JSON shape. [Start] calls Validate before it writes
// anything, and so do entry points that start runs by name (worldhttp's
// runs.start, the web UI) when they are given the workflow's runner. Return a
// *[worlds.InputError] to name the offending field.
type InputValidator interface {
	Validate() error
}

// ValidateInput implements [worlds.InputValidator]: input must decode into the
// workflow's input type without unknown fields or mistyped values, and pass the
// type's Validate method when it has one.
func (r *runner[I, O]) ValidateInput(name string, input json.RawMessage) error {
	if name != r.wfName {
		return &worlds.ArgumentError{Field: "workflowName", Value: fmt.Sprintf("%q", name), Reason: "not the workflow " + r.wfName}
	}
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("null")
	}
	var in I
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return inputError(name, err)
	}
	return validateValue(name, in)
}

// inputError names the field a JSON decoding error is about.
func inputError(name string, err error) error {
	ie := &worlds.InputError{Workflow: name, Reason: err.Error()}
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		ie.Field = te.Field
		ie.Reason = fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		ie.Field = strings.Trim(field, `"`)
		ie.Reason = "unknown field"
	}
	return ie
}

// validateValue calls in's Validate method (on the value or its pointer), if any.
func validateValue[I any](name string, in I) error {
	var err error
	if v, ok := any(in).(InputValidator); ok {
		err = v.Validate()
	} else if v, ok := any(&in).(InputValidator); ok {
		err = v.Validate()
	}
	if err == nil {
		return nil
	}
	var ie *worlds.InputError
	if errors.As(err, &ie) {
		cp := *ie
		if cp.Workflow == "" {
			cp.Workflow = name
		}
		return &cp
	}
	return &worlds.InputError{Workflow: name, Reason: err.Error()}
}

// validate checks the run ID and attributes given to [Start].
func (o startOptions) validate() error {
	if o.id != "" {
		if err := worlds.ValidateRunID(o.id); err != nil {
			return err
		}
	}
	return worlds.ValidateAttributes(o.attrs)
}
