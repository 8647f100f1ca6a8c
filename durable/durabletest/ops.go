package durabletest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Operations is a list of operations, in the order the execution recorded
// them, with the lookups a test needs (the TypeScript testing SDK's
// getOperation and getOperationByIndex).
type Operations []types.Operation

// Of returns every operation e recorded, the children of finished contexts
// included ([Execution.AllOperations]).
func Of(t testing.TB, e Execution) Operations {
	t.Helper()
	return Operations(e.AllOperations(t))
}

// ByName returns the nth (0-based) operation named name, and false if there
// are not that many.
func (ops Operations) ByName(name string, nth int) (types.Operation, bool) {
	for _, op := range ops {
		if aws.ToString(op.Name) == name {
			if nth == 0 {
				return op, true
			}
			nth--
		}
	}
	return types.Operation{}, false
}

// ByIndex returns the operation at position i, the EXECUTION operation not
// counted, and false when there is none.
func (ops Operations) ByIndex(i int) (types.Operation, bool) {
	for _, op := range ops {
		if op.Type == types.OperationTypeExecution {
			continue
		}
		if i == 0 {
			return op, true
		}
		i--
	}
	return types.Operation{}, false
}

// ByID returns the operation id.
func (ops Operations) ByID(id string) (types.Operation, bool) {
	for _, op := range ops {
		if aws.ToString(op.Id) == id {
			return op, true
		}
	}
	return types.Operation{}, false
}

// Children returns the operations whose parent is id ("" for the top level,
// the EXECUTION operation left out).
func (ops Operations) Children(id string) Operations {
	var out Operations
	for _, op := range ops {
		if aws.ToString(op.ParentId) == id && op.Type != types.OperationTypeExecution {
			out = append(out, op)
		}
	}
	return out
}

// Fprint writes the operations as a tree, one line each: type/subtype,
// name, status, ID, and the result or error.
func (ops Operations) Fprint(w io.Writer) error {
	var walk func(parent string, depth int) error
	walk = func(parent string, depth int) error {
		for _, op := range ops.Children(parent) {
			line := fmt.Sprintf("%s%s/%s %q %s %s", strings.Repeat("  ", depth), op.Type, aws.ToString(op.SubType),
				aws.ToString(op.Name), op.Status, aws.ToString(op.Id))
			if r, eo := details(op); eo != nil {
				line += fmt.Sprintf(" error=%s: %s", aws.ToString(eo.ErrorType), aws.ToString(eo.ErrorMessage))
			} else if r != nil {
				line += " result=" + *r
			}
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
			if err := walk(aws.ToString(op.Id), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk("", 0)
}

// String is the tree Fprint writes.
func (ops Operations) String() string {
	var b strings.Builder
	_ = ops.Fprint(&b)
	return b.String()
}

func details(op types.Operation) (*string, *types.ErrorObject) {
	switch {
	case op.StepDetails != nil:
		return op.StepDetails.Result, op.StepDetails.Error
	case op.ContextDetails != nil:
		return op.ContextDetails.Result, op.ContextDetails.Error
	case op.CallbackDetails != nil:
		return op.CallbackDetails.Result, op.CallbackDetails.Error
	case op.ChainedInvokeDetails != nil:
		return op.ChainedInvokeDetails.Result, op.ChainedInvokeDetails.Error
	}
	return nil, nil
}

// CallbackID returns the callback ID of the callback named name: a
// CreateCallback of that name, or the callback inside the WaitForCallback
// context of that name (which the official SDKs record unnamed).
func CallbackID(t testing.TB, e Execution, name string) (string, error) {
	t.Helper()
	ops := Of(t, e)
	for _, op := range ops {
		if op.Type != types.OperationTypeCallback || op.CallbackDetails == nil {
			continue
		}
		owner := aws.ToString(op.Name)
		if owner == "" {
			if p, ok := ops.ByID(aws.ToString(op.ParentId)); ok && aws.ToString(p.SubType) == "WaitForCallback" {
				owner = aws.ToString(p.Name)
			}
		}
		if owner == name {
			return aws.ToString(op.CallbackDetails.CallbackId), nil
		}
	}
	return "", fmt.Errorf("durabletest: no callback named %q has been created; operations:\n%s", name, ops)
}

// CompleteCallbackByName answers the callback named name (see [CallbackID])
// with result.
func CompleteCallbackByName(ctx context.Context, t testing.TB, e Execution, name, result string) error {
	t.Helper()
	id, err := CallbackID(t, e, name)
	if err != nil {
		return err
	}
	return e.CompleteCallback(ctx, id, result)
}

// FailCallbackByName fails the callback named name with message.
func FailCallbackByName(ctx context.Context, t testing.TB, e Execution, name, message string) error {
	t.Helper()
	id, err := CallbackID(t, e, name)
	if err != nil {
		return err
	}
	return e.FailCallback(ctx, id, message)
}
