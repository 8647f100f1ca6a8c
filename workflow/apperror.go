package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/cairn-go/cairn/worlds"
)

// Error type names the runtime itself records. Names starting with "cairn." are
// reserved for it: [NewErrorType] refuses them.
const (
	// ErrorTypePanic is the type of a panic recovered from step or workflow code.
	ErrorTypePanic = "panic"
	// ErrorTypeHeartbeatTimeout is the type of a step attempt failed because it
	// did not call [Heartbeat] within its [WithHeartbeatTimeout]. It is retried
	// like any other error, unless a policy lists it in NonRetryableErrorTypes.
	ErrorTypeHeartbeatTimeout = "cairn.HeartbeatTimeout"
	// ErrorTypeApplication is the type of an [ApplicationError] created with an
	// empty type name.
	ErrorTypeApplication = "ApplicationError"
)

// ErrNoErrorDetails is returned by [ErrorDetails] for an error that carries no
// details.
var ErrNoErrorDetails = errors.New("workflow: error has no details")

// ApplicationError is an error with a stable type name, a retryable or
// non-retryable flag and a JSON details payload, all of which are recorded in the
// run's log and read back unchanged, live or on replay. Create one in a step (or
// in workflow code) with [NewError] or [NewNonRetryableError]; in workflow code,
// errors.As finds one in the error a failed [Step] returns, and [ErrorDetails]
// decodes its details:
//
//	// in the step
//	return Receipt{}, workflow.NewError("quota", "quota exceeded", Quota{Limit: 10})
//
//	// in the workflow
//	var app *workflow.ApplicationError
//	if errors.As(err, &app) && app.Type == "quota" {
//		q, _ := workflow.ErrorDetails[Quota](err)
//		...
//	}
//
// Every step failure reads as an ApplicationError in workflow code: one the step
// did not create itself has the stable type name of the step's error (see
// [worlds.ErrorInfo].Type) and, for a registered error type ([NewErrorType]), that
// value as its details.
type ApplicationError struct {
	// Type is the stable type name; match on it rather than on Message.
	Type string
	// Message is the error text.
	Message string
	// NonRetryable stops retries of the step that returned it, like [Fatal].
	NonRetryable bool
	// Details is the JSON payload, nil when there is none.
	Details json.RawMessage
	cause   error
}

func (e *ApplicationError) Error() string { return e.Message }

// Unwrap returns the error the application error was made from, if any.
func (e *ApplicationError) Unwrap() error { return e.cause }

// NewError returns a retryable *[ApplicationError] of type typ with message msg
// and details, which are encoded as JSON now (nil details record none). An empty
// typ is recorded as [ErrorTypeApplication]. When details cannot be encoded it
// returns an error matching [ErrSerialization] instead.
func NewError(typ, msg string, details any) error {
	return newAppError(typ, msg, details, false)
}

// NewNonRetryableError is [NewError] for an error that fails its step at once,
// without further attempts.
func NewNonRetryableError(typ, msg string, details any) error {
	return newAppError(typ, msg, details, true)
}

func newAppError(typ, msg string, details any, nonRetryable bool) error {
	if typ == "" {
		typ = ErrorTypeApplication
	}
	e := &ApplicationError{Type: typ, Message: msg, NonRetryable: nonRetryable}
	if details != nil {
		raw, err := json.Marshal(details)
		if err != nil {
			return &SerializationError{What: "details of error type " + quote(typ), Err: err}
		}
		e.Details = raw
	}
	return e
}

// ErrorDetails decodes the details of the first [ApplicationError] in err's
// chain into a T. It returns [ErrNoErrorDetails] when there is no application
// error or it has no details, and an error matching [ErrSerialization] when they
// do not decode into a T.
func ErrorDetails[T any](err error) (T, error) {
	var zero T
	var app *ApplicationError
	if !errors.As(err, &app) || len(app.Details) == 0 {
		return zero, ErrNoErrorDetails
	}
	var v T
	if err := json.Unmarshal(app.Details, &v); err != nil {
		return zero, &SerializationError{What: "details of error type " + quote(app.Type), Err: err}
	}
	return v, nil
}

// ErrorType registers a Go error type under a stable name, so the error survives
// the log: a step error of that type is recorded with the name as its type and
// the error's JSON encoding as its details, and errors.As in workflow code finds
// a value of the type, decoded from the details, in the error a failed [Step]
// returns, live and on replay. Only what encoding/json writes survives: give the
// type exported fields, or JSON methods. Create one with [NewErrorType] and list
// it in [Config].ErrorTypes.
type ErrorType struct {
	name string
	typ  reflect.Type
}

// NewErrorType names the error type E (usually a pointer type, the one whose
// values the code returns and errors.As targets):
//
//	workflow.Config{
//		World:      world,
//		ErrorTypes: []workflow.ErrorType{workflow.NewErrorType[*QuotaError]("quota")},
//	}
//
// [NewClient] rejects an empty name, a name starting with "cairn.", an interface
// type, and a name or type listed twice, with a *[ConfigError].
func NewErrorType[E error](name string) ErrorType {
	return ErrorType{name: name, typ: reflect.TypeFor[E]()}
}

// Name returns the stable name the type is recorded under.
func (t ErrorType) Name() string { return t.name }

// errorRegistry maps registered error types to their names and back. A nil
// registry knows no types.
type errorRegistry struct {
	byType map[reflect.Type]string
	byName map[string]reflect.Type
}

func newErrorRegistry(types []ErrorType) (*errorRegistry, error) {
	if len(types) == 0 {
		return nil, nil
	}
	r := &errorRegistry{byType: map[reflect.Type]string{}, byName: map[string]reflect.Type{}}
	for i, t := range types {
		field := fmt.Sprintf("Config.ErrorTypes[%d]", i)
		switch {
		case t.typ == nil:
			return nil, &ConfigError{Field: field, Value: "ErrorType{}", Reason: "create it with NewErrorType"}
		case t.name == "":
			return nil, &ConfigError{Field: field, Value: t.typ.String(), Reason: "the name must not be empty"}
		case strings.HasPrefix(t.name, "cairn."):
			return nil, &ConfigError{Field: field, Value: t.name, Reason: `names starting with "cairn." are reserved for the runtime`}
		case t.typ.Kind() == reflect.Interface:
			return nil, &ConfigError{Field: field, Value: t.typ.String(), Reason: "must be a concrete error type, not an interface"}
		}
		if prev, ok := r.byName[t.name]; ok {
			return nil, &ConfigError{Field: field, Value: t.name, Reason: "name already registered for " + prev.String()}
		}
		if prev, ok := r.byType[t.typ]; ok {
			return nil, &ConfigError{Field: field, Value: t.typ.String(), Reason: "type already registered as " + quote(prev)}
		}
		r.byType[t.typ], r.byName[t.name] = t.name, t.typ
	}
	return r, nil
}

// decode rebuilds the registered error info describes, or returns nil.
func (r *errorRegistry) decode(info *worlds.ErrorInfo) error {
	if r == nil {
		return nil
	}
	t, ok := r.byName[info.Type]
	if !ok {
		return nil
	}
	var v reflect.Value
	if t.Kind() == reflect.Pointer {
		v = reflect.New(t.Elem())
		if len(info.Details) > 0 && json.Unmarshal(info.Details, v.Interface()) != nil {
			return nil
		}
	} else {
		p := reflect.New(t)
		if len(info.Details) > 0 && json.Unmarshal(info.Details, p.Interface()) != nil {
			return nil
		}
		v = p.Elem()
	}
	err, _ := v.Interface().(error)
	return err
}

// errorInfo converts an error into its persisted form: its message, its stable
// type name and details (see [worlds.ErrorInfo]), and whether it stops retries.
func (r *errorRegistry) errorInfo(err error) *worlds.ErrorInfo {
	if info, ok := err.(*worlds.ErrorInfo); ok && info != nil {
		// Already the persisted form (a child's recorded end, say).
		cp := *info
		return &cp
	}
	ei := &worlds.ErrorInfo{Message: err.Error(), Fatal: IsFatal(err)}
	found := walkErrors(err, func(e error) bool {
		if r != nil {
			if name, ok := r.byType[reflect.TypeOf(e)]; ok {
				ei.Type = name
				if raw, jerr := json.Marshal(e); jerr == nil && json.Valid(raw) {
					ei.Details = raw
				}
				return true
			}
		}
		if a, ok := e.(*ApplicationError); ok {
			ei.Type, ei.Details = a.Type, a.Details
			if ei.Type == "" {
				ei.Type = ErrorTypeApplication
			}
			return true
		}
		return false
	})
	if !found {
		ei.Type = goTypeName(err)
	}
	return ei
}

// errorInfo is errorInfo for code without the registered types at hand.
func errorInfo(err error) *worlds.ErrorInfo { return (*errorRegistry)(nil).errorInfo(err) }

// walkErrors visits err's tree depth first, parents before their causes, until
// visit returns true; it reports whether one did.
func walkErrors(err error, visit func(error) bool) bool {
	for depth := 0; err != nil && depth < 100; depth++ {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				if walkErrors(c, visit) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}

// goTypeName names an unregistered error by the Go type of the first error in
// its chain that is not a plain wrapper, so wrapping an error with fmt.Errorf's
// %w, errors.Join or [Fatal] does not change its recorded type.
func goTypeName(err error) string {
	for depth := 0; depth < 100; depth++ {
		var next error
		switch e := err.(type) {
		case *FatalError:
			next = e.Err
		default:
			switch reflect.TypeOf(err).String() {
			case "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
				switch u := err.(type) {
				case interface{ Unwrap() []error }:
					if cs := u.Unwrap(); len(cs) > 0 {
						next = cs[0]
					}
				case interface{ Unwrap() error }:
					next = u.Unwrap()
				}
			}
		}
		if next == nil {
			break
		}
		err = next
	}
	return reflect.TypeOf(err).String()
}

// unwrapInfo is what a [StepError] or [RunError] holding info unwraps to: the
// info itself, the [ApplicationError] it records, and the registered error
// type's value when info names one.
func unwrapInfo(info *worlds.ErrorInfo, reg *errorRegistry) []error {
	out := []error{info, &ApplicationError{Type: info.Type, Message: info.Message, NonRetryable: info.Fatal, Details: info.Details}}
	if orig := reg.decode(info); orig != nil {
		out = append(out, orig)
	}
	return out
}
