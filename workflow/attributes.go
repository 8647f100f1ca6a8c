package workflow

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/cairn-go/cairn/worlds"
)

// ErrInvalidAttribute: a search attribute [UpsertAttributes] refused. Matched
// by *[AttributeError].
var ErrInvalidAttribute = errors.New("workflow: invalid search attribute")

// AttributeError reports a search attribute [UpsertAttributes] refused before
// recording anything: a key outside the allowed characters or lengths, a value
// too long or not UTF-8, or more attributes than a run may hold. Key is the
// attribute's key ("" when the error concerns the call as a whole) and Value
// its value, clipped. It matches [ErrInvalidAttribute] and
// [worlds.ErrInvalidArgument].
type AttributeError struct {
	Key    string
	Value  string
	Reason string
}

func (e *AttributeError) Error() string {
	if e.Key == "" {
		return "workflow: invalid search attributes: " + e.Reason
	}
	return fmt.Sprintf("workflow: invalid search attribute %q=%q: %s", e.Key, e.Value, e.Reason)
}

// Is matches [ErrInvalidAttribute] and [worlds.ErrInvalidArgument].
func (e *AttributeError) Is(target error) bool {
	return target == ErrInvalidAttribute || target == worlds.ErrInvalidArgument
}

// upsertKind prefixes the correlation ID of the attributes_set event that
// records an [UpsertAttributes] call.
const upsertKind = "attrs"

// UpsertAttributes sets search attributes of the run: each pair replaces the
// value of its key, or adds the key, and leaves the run's other attributes as
// they are. The run's view shows them ([worlds.Run].Attributes, through
// Client.GetRun, the CLI and the web UI), and listings select runs by them
// with [worlds.RunFilter].Attributes (cairn inspect runs --attr k=v):
//
//	if err := workflow.UpsertAttributes(ctx, map[string]string{"customer": in.Customer, "stage": "shipping"}); err != nil {
//		return err
//	}
//
// Limits, checked before anything is recorded, with an *[AttributeError]:
// keys are 1 to [worlds.MaxAttributeKeyLength] (128) bytes of ASCII letters,
// digits, '_', '-', '.' and ':', starting with a letter, and not starting with
// "cairn." (the runtime's own); values are at most
// [worlds.MaxAttributeValueLength] (1024) bytes of UTF-8 without control
// characters; one call sets at most [worlds.MaxAttributes] (50) pairs, and a
// run holds at most 50 attributes besides the runtime's own (those given at
// start with [WithAttributes] count).
//
// The call is recorded in the run's log as an attributes_set event, with the
// run's next write: the next step, timer or hook it creates, or its end. A
// replay finds the record and writes nothing again, so a call is recorded once
// however often the run is replayed; what the World shows is what the log
// says. Like [Version], the call takes no position among the run's
// operations: adding or removing a call in code that runs in flight is safe,
// and a call added to code past which a run already went is recorded when
// that run next replays through it.
func UpsertAttributes(ctx Context, attrs map[string]string) error {
	e, err := execOf(ctx)
	if err != nil {
		return err
	}
	e.enter()
	if len(attrs) == 0 {
		return nil
	}
	if len(attrs) > worlds.MaxAttributes {
		return &AttributeError{Value: strconv.Itoa(len(attrs)), Reason: fmt.Sprintf("%d pairs in one call, at most %d", len(attrs), worlds.MaxAttributes)}
	}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if err := worlds.ValidateSearchAttributeKey(k); err != nil {
			return attributeError(k, attrs[k], err)
		}
		if err := worlds.ValidateSearchAttributeValue(k, attrs[k]); err != nil {
			return attributeError(k, attrs[k], err)
		}
	}
	// The call's identity: the operation position it follows and its rank among
	// the calls there. Code that replays the same way makes the same calls, in
	// the same order, between the same operations.
	if e.upsertPos != e.pos {
		e.upsertPos, e.upsertN = e.pos, 0
	}
	e.upsertN++
	id := upsertKind + "_" + strconv.Itoa(e.pos) + "_" + strconv.Itoa(e.upsertN)
	if e.hist.upserts[id] || e.mode != modeAdvance {
		// Recorded already; or an execution that records nothing (capture
		// replays only the log).
		return nil
	}
	merged := maps.Clone(e.hist.attrs)
	if merged == nil {
		merged = map[string]string{}
	}
	for _, m := range e.marks {
		if m.Type == worlds.EventAttributesSet {
			maps.Copy(merged, m.Attributes)
		}
	}
	maps.Copy(merged, attrs)
	if n := worlds.UserAttributeCount(merged); n > worlds.MaxAttributes {
		return &AttributeError{Value: strconv.Itoa(n), Reason: fmt.Sprintf("the run would hold %d attributes, at most %d", n, worlds.MaxAttributes)}
	}
	e.marks = append(e.marks, worlds.Event{Type: worlds.EventAttributesSet, CorrelationID: id, Attributes: maps.Clone(attrs)})
	return nil
}

func attributeError(k, v string, err error) error {
	var ae *worlds.ArgumentError
	reason := err.Error()
	if errors.As(err, &ae) {
		reason = ae.Reason
	}
	if r := []rune(v); len(r) > 40 {
		v = string(r[:40]) + "…"
	}
	return &AttributeError{Key: k, Value: v, Reason: reason}
}

// isUpsert reports whether ev records an [UpsertAttributes] call.
func isUpsert(ev worlds.Event) bool {
	return ev.Type == worlds.EventAttributesSet && ev.CorrelationID != ""
}
