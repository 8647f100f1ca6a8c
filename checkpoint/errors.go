package checkpoint

import (
	"errors"
	"fmt"
)

// Error kinds. Every error this package returns is an *[Error] whose Kind is one
// of these, matchable with errors.Is. All of them are permanent: decoding the same
// bytes again gives the same error, so a runtime must fail the step or run rather
// than retry it.
var (
	// ErrTooLarge: the encoded envelope exceeds Options.MaxBytes.
	ErrTooLarge = errors.New("checkpoint: value too large")
	// ErrSyntax: the bytes are not one well-formed JSON value.
	ErrSyntax = errors.New("checkpoint: malformed JSON")
	// ErrInvalidUTF8: a string holds invalid UTF-8 or an unpaired surrogate escape.
	ErrInvalidUTF8 = errors.New("checkpoint: invalid UTF-8")
	// ErrDuplicateMember: an object names the same member twice.
	ErrDuplicateMember = errors.New("checkpoint: duplicate object member")
	// ErrTooDeep: nesting exceeds Options.MaxDepth.
	ErrTooDeep = errors.New("checkpoint: nesting too deep")
	// ErrEnvelope: the envelope is missing a member or has an unexpected one.
	ErrEnvelope = errors.New("checkpoint: malformed envelope")
	// ErrUnsupportedVersion: the envelope's "v" is not a version this release reads.
	ErrUnsupportedVersion = errors.New("checkpoint: unsupported serializer version")
	// ErrTypeMismatch: the envelope's "type" is not the type the caller expects.
	ErrTypeMismatch = errors.New("checkpoint: type mismatch")
	// ErrTampered: the integrity sum does not match the stored type and data.
	ErrTampered = errors.New("checkpoint: integrity check failed")
	// ErrUnknownField: data has a member the target struct does not declare
	// (a field removed or renamed since the value was written).
	ErrUnknownField = errors.New("checkpoint: unknown field")
	// ErrSchema: data does not fit the target Go type (a field's type changed).
	ErrSchema = errors.New("checkpoint: data does not match the Go type")
	// ErrMarshal: the value could not be encoded (a MarshalJSON error, an
	// unsupported type such as a channel, NaN).
	ErrMarshal = errors.New("checkpoint: value cannot be encoded")
)

// Op is the direction of a failed operation.
type Op string

// Directions.
const (
	OpEncode Op = "encode"
	OpDecode Op = "decode"
)

// Error describes a failed encode or decode. It matches Kind and Err with errors.Is.
type Error struct {
	Op   Op
	Kind error
	// Type is the checkpoint type name involved, when known.
	Type string
	// Field names the offending JSON member or path, when known.
	Field string
	// Size and Limit are set for ErrTooLarge (bytes) and ErrTooDeep (levels).
	Size, Limit int
	// Offset is the byte offset of a syntax, UTF-8 or duplicate-member error.
	Offset int
	Err    error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %s", e.Kind, e.Op)
	if e.Type != "" {
		msg += fmt.Sprintf(" of type %q", e.Type)
	}
	if e.Field != "" {
		msg += fmt.Sprintf(": field %q", e.Field)
	}
	if e.Kind == ErrTooLarge {
		msg += fmt.Sprintf(": %d bytes exceeds the limit of %d", e.Size, e.Limit)
	}
	if e.Kind == ErrTooDeep {
		msg += fmt.Sprintf(": depth %d exceeds the limit of %d", e.Size, e.Limit)
	}
	if e.Kind == ErrSyntax || e.Kind == ErrInvalidUTF8 || e.Kind == ErrDuplicateMember {
		msg += fmt.Sprintf(" at byte %d", e.Offset)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Permanent reports that retrying cannot help; every checkpoint error is permanent.
func (e *Error) Permanent() bool { return true }
