package durable

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// A Future is a durable operation that was started without waiting for its
// outcome: a [*Callback] from [CreateCallback] or a [*Wait] from
// [Context.StartWait]. The service settles it, between invocations; [All],
// [AllSettled], [Any] and [Race] wait for a combination of futures. Their
// typed outcome is read from the future itself (Callback.Result, Wait.Wait)
// once it has settled. A future is combined in the context that started it
// or in one below it: a future that escapes a child context is refused, since
// once that context finishes the service no longer reports its operations.
type Future interface {
	// settled reports, from the state this invocation holds and without
	// suspending, whether the operation has an outcome: when it ended, and the
	// error its own accessor returns (nil for a success).
	settled() (ok bool, at time.Time, err error)
	// context is the context the operation was started in.
	context() *Context
}

// context is nil for a nil *Callback (what CreateCallback returns with an
// error), so that combine refuses it as it refuses a nil Future.
func (c *Callback[T]) context() *Context {
	if c == nil {
		return nil
	}
	return c.dc
}

func (c *Callback[T]) settled() (bool, time.Time, error) {
	op := c.dc.x.op(c.id)
	if op == nil || !finished(op.Status) {
		return false, time.Time{}, nil
	}
	if op.Status == types.OperationStatusSucceeded {
		return true, aws.ToTime(op.EndTimestamp), nil
	}
	return true, aws.ToTime(op.EndTimestamp), operationError(op)
}

// context is nil for a nil *Wait (what StartWait returns with an error).
func (w *Wait) context() *Context {
	if w == nil {
		return nil
	}
	return w.dc
}

func (w *Wait) settled() (bool, time.Time, error) {
	op := w.dc.x.op(w.id)
	if op == nil || !finished(op.Status) {
		return false, time.Time{}, nil
	}
	switch op.Status {
	case types.OperationStatusSucceeded:
		return true, aws.ToTime(op.EndTimestamp), nil
	case types.OperationStatusCancelled:
		return true, aws.ToTime(op.EndTimestamp), fmt.Errorf("%w: %w", ErrWaitCancelled, operationError(op))
	}
	return true, aws.ToTime(op.EndTimestamp), operationError(op)
}

// ErrAllFailed: every future given to [Any] failed. The error [Any] returns
// matches it and joins the futures' own errors, in argument order.
var ErrAllFailed = errors.New("durable: every future failed")

// combination is what a combinator records as its CONTEXT result: which
// future decided it (-1: none did, every future counted), and how many it was
// given, to detect code that now passes a different set.
type combination struct {
	Futures int `json:"futures"`
	Index   int `json:"index"`
}

// decide, given the futures' errors and the settled ones in the order they
// ended, returns the deciding index (-1: all counted) once the combinator is
// settled, or ok=false to wait for more.
type decide func(errs []error, order []int) (index int, ok bool)

// combine runs a combinator as a child context named name (subtype
// RunInChildContext, as the official SDKs record theirs): while undecided it
// suspends the execution, so the service reinvokes it once a future settles;
// once decided it checkpoints the decision, and replays return that decision
// without looking at the futures again. The futures must have been started in
// dc or one of its ancestors (not in a child context), in this invocation.
func combine(dc *Context, name string, fs []Future, rule decide) (int, error) {
	for i, f := range fs {
		if f == nil || !within(dc, f.context()) { // f.context() is nil for a nil *Callback or *Wait too
			return 0, Fatal(fmt.Errorf("%w: future %d of %q is nil, or was started in another invocation or in a context that is not dc or one of its ancestors", ErrInvalidInput, i, name))
		}
	}
	c, err := runChild(dc, name, subChild, func(context.Context, *Context) (combination, error) {
		errs := make([]error, len(fs))
		at := make([]time.Time, len(fs))
		var order []int // settled futures, earliest end first, ties in argument order
		for i, f := range fs {
			var done bool
			done, at[i], errs[i] = f.settled()
			if done {
				order = append(order, i)
			}
		}
		sort.SliceStable(order, func(a, b int) bool {
			ta, tb := at[order[a]], at[order[b]]
			if ta.IsZero() || tb.IsZero() {
				return !ta.IsZero() && tb.IsZero() // an unrecorded end time sorts last
			}
			return ta.Before(tb)
		})
		idx, ok := rule(errs, order)
		if !ok {
			panic(suspend{})
		}
		return combination{Futures: len(fs), Index: idx}, nil
	}, nil, nil, nil)
	if err != nil {
		return 0, err
	}
	if c.Futures != len(fs) || c.Index < -1 || c.Index >= len(fs) {
		panic(abort{err: fmt.Errorf("%w: combinator %q decided on future %d of %d, code passes %d futures", ErrNondeterministic, name, c.Index, c.Futures, len(fs))})
	}
	return c.Index, nil
}

// within reports whether owner is dc or one of its ancestors in the same
// invocation: contexts still running, whose operations the service keeps in
// state. A future from a child context that has since finished could vanish
// from state, and a combinator waiting on it would never be reinvoked.
func within(dc, owner *Context) bool {
	if owner == nil || owner.x != dc.x {
		return false
	}
	return owner.prefix == "" || owner.prefix == dc.prefix || strings.HasPrefix(dc.prefix, owner.prefix+"-")
}

// outcome returns future i's error; a recorded decision names a future that
// had settled, so its outcome is in state for good.
func outcome(f Future) error {
	_, _, err := f.settled()
	return err
}

// All waits until every future has succeeded and returns nil, or returns the
// error of the first to fail as soon as one fails, without waiting for the
// others (fail fast). "First" is the earliest end time the service recorded,
// ties going to the earlier argument. The combinator is a CONTEXT operation
// named name: the execution suspends until it is decided, and the decision is
// checkpointed, so replays return it whatever the futures did since. All of
// no futures returns nil.
func All(dc *Context, name string, fs ...Future) error {
	i, err := combine(dc, name, fs, func(errs []error, order []int) (int, bool) {
		for _, j := range order {
			if errs[j] != nil {
				return j, true
			}
		}
		return -1, len(order) == len(fs)
	})
	if err != nil || i < 0 {
		return err
	}
	return outcome(fs[i])
}

// AllSettled waits until every future has settled, successfully or not, and
// returns their errors by argument position (nil for a success). Like [All] it
// is a CONTEXT operation named name whose completion is checkpointed.
func AllSettled(dc *Context, name string, fs ...Future) ([]error, error) {
	if _, err := combine(dc, name, fs, func(_ []error, order []int) (int, bool) {
		return -1, len(order) == len(fs)
	}); err != nil {
		return nil, err
	}
	errs := make([]error, len(fs))
	for i, f := range fs {
		errs[i] = outcome(f)
	}
	return errs, nil
}

// Any waits for the first future to succeed and returns its index; read its
// value from the future. When every future has failed it returns -1 and an
// error matching [ErrAllFailed] that joins their errors. "First" and the
// checkpointed decision are as for [All]. At least one future is required.
func Any(dc *Context, name string, fs ...Future) (int, error) {
	if len(fs) == 0 {
		return -1, Fatal(fmt.Errorf("%w: Any %q of no futures", ErrInvalidInput, name))
	}
	i, err := combine(dc, name, fs, func(errs []error, order []int) (int, bool) {
		for _, j := range order {
			if errs[j] == nil {
				return j, true
			}
		}
		return -1, len(order) == len(fs)
	})
	if err != nil {
		return -1, err
	}
	if i >= 0 {
		return i, nil
	}
	errs := []error{ErrAllFailed}
	for _, f := range fs {
		errs = append(errs, outcome(f))
	}
	return -1, errors.Join(errs...)
}

// Race waits for the first future to settle, successfully or not, and returns
// its index and its error. "First" and the checkpointed decision are as for
// [All]: a replay returns the same index even when other futures have settled
// since. A typical use races a [Callback] against a [Wait] and cancels the
// loser. At least one future is required.
func Race(dc *Context, name string, fs ...Future) (int, error) {
	if len(fs) == 0 {
		return -1, Fatal(fmt.Errorf("%w: Race %q of no futures", ErrInvalidInput, name))
	}
	i, err := combine(dc, name, fs, func(_ []error, order []int) (int, bool) {
		if len(order) == 0 {
			return 0, false
		}
		return order[0], true
	})
	if err != nil {
		return -1, err
	}
	if i < 0 {
		panic(abort{err: fmt.Errorf("%w: Race %q recorded no winner", ErrNondeterministic, name)})
	}
	return i, outcome(fs[i])
}
