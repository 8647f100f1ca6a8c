package durable

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Error type names the official SDKs give durable failures, in error objects
// and in the failures they hand to user code. [OperationError.ErrorType]
// returns one of them.
const (
	// ErrorTypeError names an error with no type of its own (what a plain
	// JavaScript Error records; a Go error without an ErrorType method).
	ErrorTypeError              = "Error"
	ErrorTypeStep               = "StepError"
	ErrorTypeChildContext       = "ChildContextError"
	ErrorTypeCallback           = "CallbackError"
	ErrorTypeCallbackExternal   = "CallbackExternalError"
	ErrorTypeCallbackTimeout    = "CallbackTimeoutError"
	ErrorTypeCallbackSubmitter  = "CallbackSubmitterError"
	ErrorTypeInvoke             = "InvokeError"
	ErrorTypeWaitForCondition   = "WaitForConditionError"
	ErrorTypeWaitCancelled      = "WaitCancelledError"
	ErrorTypeNondeterministic   = "durable.Nondeterministic"
	ErrorTypeCheckpointRejected = "durable.CheckpointRejected"
)

// knownDurableTypes are the types the TypeScript SDK reconstructs as their
// own classes; any other recorded type is handed over as a StepError.
var knownDurableTypes = map[string]bool{ErrorTypeStep: true, ErrorTypeCallback: true, ErrorTypeCallbackExternal: true,
	ErrorTypeCallbackTimeout: true, ErrorTypeCallbackSubmitter: true, ErrorTypeInvoke: true, ErrorTypeChildContext: true,
	"PromiseCombinatorError": true, ErrorTypeWaitForCondition: true}

// ErrTimedOut matches (errors.Is) the *[OperationError] of an operation the
// service ended TIMED_OUT: a callback without an answer or a heartbeat in
// time.
var ErrTimedOut = errors.New("durable: operation timed out")

// ErrorTyper is implemented by errors that name their own type. The error
// object checkpointed for a failure carries ErrorType() as its ErrorType;
// without it the type is "Error", as for a JavaScript Error, and never a Go
// type name, which would change whenever the error is wrapped.
type ErrorTyper interface {
	ErrorType() string
}

// OperationError is the failure of a durable operation: a step, callback,
// child context, batch branch, condition or chained invoke. Live failures of
// a step wrap the step's own error (Unwrap), so typed business errors
// survive; replays return the same fields from history without the cause.
type OperationError struct {
	OperationID string
	Name        string
	// Type is the ErrorType of the recorded error object: the failing
	// error's own type, e.g. "Error" or what its ErrorType method returned.
	Type    string
	Message string
	Data    string
	// Status is the operation's recorded status (FAILED, TIMED_OUT, ...).
	Status string
	// SDKType is the official SDKs' name for this failure (ErrorTypeStep,
	// ErrorTypeCallbackTimeout, ...), which ErrorType returns.
	SDKType string
	// Cause is the live error the operation failed with; nil on replay.
	Cause error
}

func (e *OperationError) Error() string {
	return fmt.Sprintf("durable: operation %s (%s) failed: %s: %s", e.OperationID, e.Name, e.Type, e.Message)
}

// Unwrap returns the live cause, if any.
func (e *OperationError) Unwrap() error { return e.Cause }

// Is matches [ErrTimedOut] for an operation that timed out.
func (e *OperationError) Is(target error) bool {
	return target == ErrTimedOut && (e.Status == string(types.OperationStatusTimedOut) || e.SDKType == ErrorTypeCallbackTimeout)
}

// ErrorType is the official SDKs' name for the failure.
func (e *OperationError) ErrorType() string {
	switch {
	case e.SDKType != "":
		return e.SDKType
	case e.Type != "":
		return e.Type
	}
	return ErrorTypeError
}

// errorType names err in an error object: the ErrorType of the first error
// in its chain that has one, else "Error".
func errorType(err error) string {
	var t ErrorTyper
	if errors.As(err, &t) {
		if s := t.ErrorType(); s != "" {
			return s
		}
	}
	return ErrorTypeError
}

// errorObject is the error object of err as the official SDKs write it: the
// type as errorType names it; the message and data of an *OperationError
// returned as it is (the failure of an operation, handed on), else err's text.
func errorObject(err error) *types.ErrorObject {
	for {
		p, ok := err.(*Permanent)
		if !ok {
			break
		}
		err = p.Err
	}
	eo := &types.ErrorObject{ErrorType: aws.String(errorType(err)), ErrorMessage: aws.String(err.Error())}
	if oe, ok := err.(*OperationError); ok {
		eo.ErrorMessage = aws.String(oe.Message)
		if oe.Data != "" {
			eo.ErrorData = aws.String(oe.Data)
		}
	}
	return fitError(eo)
}

// contextErrorObject is the error object of a child context failing with
// err: the same as a step's.
func contextErrorObject(err error) *types.ErrorObject { return errorObject(err) }

// operationError is the failure op records, named sdkType unless op's type
// says otherwise (see failureType).
func operationError(op *types.Operation) *OperationError {
	e := &OperationError{OperationID: aws.ToString(op.Id), Name: aws.ToString(op.Name), Status: string(op.Status)}
	var eo *types.ErrorObject
	switch {
	case op.StepDetails != nil:
		eo = op.StepDetails.Error
	case op.CallbackDetails != nil:
		eo = op.CallbackDetails.Error
	case op.ContextDetails != nil:
		eo = op.ContextDetails.Error
	case op.ChainedInvokeDetails != nil:
		eo = op.ChainedInvokeDetails.Error
	}
	if eo != nil {
		e.Type, e.Message, e.Data = aws.ToString(eo.ErrorType), aws.ToString(eo.ErrorMessage), aws.ToString(eo.ErrorData)
	}
	e.SDKType = failureType(op, e.Type)
	if e.Type == "" {
		e.Type = e.SDKType
	}
	if e.Message == "" && eo == nil {
		e.Message = defaultMessage(op)
	}
	return e
}

// failureType is the name the TypeScript SDK gives the failure of op whose
// error object has type recorded.
func failureType(op *types.Operation, recorded string) string {
	switch op.Type {
	case types.OperationTypeCallback:
		if op.Status == types.OperationStatusTimedOut {
			return ErrorTypeCallbackTimeout
		}
		return ErrorTypeCallbackExternal
	case types.OperationTypeChainedInvoke:
		return ErrorTypeInvoke
	case types.OperationTypeWait:
		return ErrorTypeWaitCancelled
	case types.OperationTypeContext:
		if aws.ToString(op.SubType) == subWaitCallback {
			switch recorded {
			case ErrorTypeCallbackTimeout, ErrorTypeCallbackExternal, ErrorTypeCallback:
				return recorded
			case ErrorTypeStep:
				return ErrorTypeCallbackSubmitter
			}
		}
		return ErrorTypeChildContext
	case types.OperationTypeStep:
		if aws.ToString(op.SubType) == subCondition {
			return ErrorTypeWaitForCondition
		}
	}
	return ErrorTypeStep
}

// defaultMessage is the message of a failure recorded without an error object.
func defaultMessage(op *types.Operation) string {
	switch {
	case op.Type == types.OperationTypeCallback && op.Status == types.OperationStatusTimedOut:
		return "Callback timed out"
	case op.Type == types.OperationTypeCallback:
		return "Callback failed"
	}
	return string(op.Status)
}

// liveFailure is the error a step returns when its body failed for good: an
// *OperationError with the checkpointed fields, wrapping the body's error.
func liveFailure(id, name, sdkType string, eo *types.ErrorObject, cause error) *OperationError {
	return &OperationError{OperationID: id, Name: name, Type: aws.ToString(eo.ErrorType), Message: aws.ToString(eo.ErrorMessage),
		Data: aws.ToString(eo.ErrorData), Status: string(types.OperationStatusFailed), SDKType: sdkType, Cause: cause}
}
