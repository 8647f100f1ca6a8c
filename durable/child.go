package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/checkpoint"
)

// Operation subtypes as the official SDKs record them.
const (
	subChild        = "RunInChildContext"
	subParallel     = "Parallel"
	subBranch       = "ParallelBranch"
	subMap          = "Map"
	subIteration    = "MapIteration"
	subCondition    = "WaitForCondition"
	subInvoke       = "ChainedInvoke"
	subWaitCallback = "WaitForCallback"
)

// rebuilder lets runChild checkpoint a batch result too large for the payload
// as a marker with ContextOptions.ReplayChildren, and rebuild it on replay from
// the branches' state (which the service then keeps in state loads). Without
// one, runChild checkpoints an empty payload with ReplayChildren and rebuilds
// the result by running the context's function again over its recorded
// children, as the official SDKs do.
type rebuilder[T any] struct {
	// marker is the small value checkpointed instead of v.
	marker func(v T) batchSummary
	// rebuild returns the result from the children of the context child.
	rebuild func(child *Context, m batchSummary) (T, error)
}

// RunInChildContext runs fn in a child context: a CONTEXT operation whose own
// operations are its children (their IDs derive from the child's step ID, their
// ParentId is its operation ID). Once the child succeeds its result is
// checkpointed and later replays return it without running fn or visiting its
// children. A failure is checkpointed too and replays as an *[OperationError].
//
// A result larger than the operation payload limit (the serdes' MaxBytes,
// 256 KB by default) is not checkpointed: the context is checkpointed with an
// empty payload and ContextOptions.ReplayChildren, so the service keeps its
// children in state, and a replay runs fn again to rebuild the result. In that
// re-run every operation comes from history — no step body runs again — and an
// operation history does not hold fails the invocation with
// [ErrNondeterministic], as any divergence does. A wait or callback the live
// run left unsettled (the loser of a [Race]) is created again from its record;
// waiting on it in the re-run is such a divergence.
func RunInChildContext[T any](dc *Context, name string, fn func(ctx context.Context, child *Context) (T, error)) (T, error) {
	return runChild(dc, name, subChild, fn, nil, nil, nil)
}

// ChildOptions configure [RunInChildContextWith].
type ChildOptions struct {
	// Serdes encodes the context's result; nil: Options.Serdes.
	Serdes Serdes
}

// RunInChildContextWith is [RunInChildContext] with its own options.
func RunInChildContextWith[T any](dc *Context, name string, opts ChildOptions, fn func(ctx context.Context, child *Context) (T, error)) (T, error) {
	return runChild(dc, name, subChild, fn, nil, nil, opts.Serdes)
}

// runChild runs fn as the CONTEXT operation name. closing, when set, is called
// once fn has returned: the updates it returns are checkpointed in the same
// request as the context's SUCCEED or FAIL, so either both or neither apply.
// big, when set, takes a result too large for the payload: see [rebuilder].
func runChild[T any](dc *Context, name, sub string, fn func(ctx context.Context, child *Context) (T, error), closing func() []types.OperationUpdate, big *rebuilder[T], serdes Serdes) (T, error) {
	var zero T
	if serdes == nil {
		serdes = dc.x.h.opts.Serdes
	}
	id, op := dc.next(types.OperationTypeContext, sub, name)
	child := &Context{x: dc.x, prefix: dc.stepID(), parentID: id, rebuilding: dc.rebuilding}
	if op != nil {
		if finished(op.Status) {
			dc.visitUnder(id)
		}
		if op.Status == types.OperationStatusSucceeded && big == nil && op.ContextDetails != nil && aws.ToBool(op.ContextDetails.ReplayChildren) {
			// The result was too large for the payload: run fn again over the
			// children the service kept, without checkpointing anything.
			return rerun(dc.x, child, id, name, fn)
		}
		switch op.Status {
		case types.OperationStatusSucceeded:
			var v T
			if op.ContextDetails == nil || op.ContextDetails.Result == nil {
				return zero, nil
			}
			if big != nil && aws.ToBool(op.ContextDetails.ReplayChildren) {
				// The result was too large: the payload is a summary and the
				// service kept the children, from which the result is rebuilt.
				var m batchSummary
				if err := dc.x.h.opts.Serdes.Deserialize(SerdesContext{ExecutionArn: dc.x.arn, OperationID: id, Name: name, Kind: KindBatch}, op.ContextDetails.Result, &m); err != nil {
					return zero, &SerdesError{OperationID: id, Name: name, Op: "deserialize", Err: err}
				}
				return big.rebuild(child, m)
			}
			if err := dc.deserialize(serdes, KindContext, id, name, op.ContextDetails.Result, &v); err != nil {
				return zero, err
			}
			return v, nil
		case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
			return zero, operationError(op)
		}
		// STARTED: the child began in an earlier invocation; replay it.
	} else {
		dc.checkpoint(dc.update(id, name, types.OperationTypeContext, sub, types.OperationActionStart))
	}
	v, err := fn(withInfo(dc.x.ctx, Info{ExecutionArn: dc.x.arn, OperationID: id, OperationName: name}), child)
	if err != nil && dc.x.ctx.Err() != nil && errors.Is(err, dc.x.ctx.Err()) {
		panic(abort{err: err})
	}
	var updates []types.OperationUpdate
	if closing != nil {
		updates = closing()
	}
	var payload *string
	replayChildren := false
	if err == nil {
		payload, err = dc.serialize(serdes, KindContext, id, name, v)
		switch {
		case errors.Is(err, checkpoint.ErrTooLarge) && big != nil:
			// Too large for the context's payload: checkpoint a summary and ask
			// the service to keep the children in state, to rebuild the result from.
			payload, err = dc.serialize(dc.x.h.opts.Serdes, KindBatch, id, name, big.marker(v))
			replayChildren = true
		case errors.Is(err, checkpoint.ErrTooLarge):
			// Replays run fn again over the children the service keeps.
			payload, err = aws.String(""), nil
			replayChildren = true
		case err == nil:
			v, err = roundTrip(dc, serdes, KindContext, id, name, payload, v)
		}
	}
	if err != nil {
		u := dc.update(id, name, types.OperationTypeContext, sub, types.OperationActionFail)
		u.Error = contextErrorObject(err)
		dc.checkpoint(append(updates, u)...)
		dc.x.cancelled(waitIDs(updates)...)
		return zero, liveFailure(id, name, failureType(&types.Operation{Type: types.OperationTypeContext, SubType: aws.String(sub)}, aws.ToString(u.Error.ErrorType)), u.Error, err)
	}
	u := dc.update(id, name, types.OperationTypeContext, sub, types.OperationActionSucceed)
	u.Payload = payload
	if replayChildren {
		u.ContextOptions = &types.ContextOptions{ReplayChildren: aws.Bool(true)}
	}
	dc.checkpoint(append(updates, u)...)
	dc.x.cancelled(waitIDs(updates)...)
	return v, nil
}

// rerun rebuilds the result of the finished context id, checkpointed with
// ReplayChildren and no result, by running fn again in child with every
// operation replayed from history (the caller has counted them as visited).
func rerun[T any](x *execution, child *Context, id, name string, fn func(ctx context.Context, child *Context) (T, error)) (T, error) {
	child.rebuilding = true
	defer func() {
		// The live run finished this context, so the same code over the same
		// history cannot block: waiting on a future it left unsettled is a
		// divergence, not a reason to end the invocation PENDING.
		if p := recover(); p != nil {
			if _, ok := p.(suspend); ok {
				p = abort{err: fmt.Errorf("%w: context %s (%s) succeeded, and rebuilding its result waits on an operation that has not settled", ErrNondeterministic, id, name)}
			}
			panic(p)
		}
	}()
	v, err := fn(withInfo(x.ctx, Info{ExecutionArn: x.arn, OperationID: id, OperationName: name, Replaying: true}), child)
	if err != nil {
		if x.ctx.Err() != nil && errors.Is(err, x.ctx.Err()) {
			panic(abort{err: err})
		}
		// The context succeeded; the same code over the same history cannot fail.
		panic(abort{err: fmt.Errorf("%w: context %s (%s) succeeded, and rebuilding its result failed: %w", ErrNondeterministic, id, name, err)})
	}
	return v, nil
}

// waitIDs returns the IDs of the WAIT CANCEL updates among updates.
func waitIDs(updates []types.OperationUpdate) []string {
	var ids []string
	for _, u := range updates {
		if u.Type == types.OperationTypeWait && u.Action == types.OperationActionCancel {
			ids = append(ids, aws.ToString(u.Id))
		}
	}
	return ids
}

// startedWaitsUnder returns a CANCEL update for every STARTED WAIT whose
// ParentId chain reaches one of roots, in operation-ID order.
func (x *execution) startedWaitsUnder(roots map[string]bool) []types.OperationUpdate {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []types.OperationUpdate
	for id, op := range x.ops {
		if op.Type != types.OperationTypeWait || op.Status != types.OperationStatusStarted {
			continue
		}
		if a, _ := x.ancestor(op, func(id string) bool { return roots[id] }); a == "" {
			continue
		}
		sub := aws.ToString(op.SubType)
		if sub == "" {
			sub = "Wait"
		}
		out = append(out, types.OperationUpdate{Id: aws.String(id), Name: op.Name, Type: types.OperationTypeWait,
			Action: types.OperationActionCancel, SubType: aws.String(sub), ParentId: op.ParentId})
	}
	sort.Slice(out, func(i, j int) bool { return aws.ToString(out[i].Id) < aws.ToString(out[j].Id) })
	return out
}

// BatchOptions configure [Parallel] and [Map].
type BatchOptions struct {
	// MaxConcurrency bounds how many branches run at once in this invocation; 0:
	// all of them.
	MaxConcurrency int
	// MinSuccessful ends the batch once this many branches succeeded: branches not
	// yet started are not started. 0: every branch must finish.
	MinSuccessful int
	// ToleratedFailures ends the batch (CompletionReason FailureToleranceExceeded)
	// once more branches failed than this. Negative: any number is tolerated; 0
	// (the zero value): the first failure ends it.
	ToleratedFailures int
	// ToleratedFailurePercentage, when positive, also ends the batch once more
	// than this percentage of all branches failed.
	ToleratedFailurePercentage float64
	// Serdes encodes the batch's result, the BatchResult; nil: Options.Serdes.
	Serdes Serdes
	// ItemSerdes encodes each branch's result in its own context; nil: Options.Serdes.
	ItemSerdes Serdes
}

// Branch is one branch of [Parallel]: it runs in its own child context.
type Branch[T any] func(ctx context.Context, dc *Context) (T, error)

// NamedBranch is a branch of [ParallelNamed]: Fn runs in its own child context,
// a CONTEXT operation recorded under Name instead of "parallel-branch-<i>".
type NamedBranch[T any] struct {
	// Name names the branch's CONTEXT operation: 1 to 256 printable ASCII
	// characters (the service's limit for an operation name), unique within
	// the call.
	Name string
	// Fn is the branch.
	Fn Branch[T]
}

// Parallel runs the branches, each in its own child context, at most
// opts.MaxConcurrency at a time, and checkpoints the batch's outcome once the
// completion policy is met. As in the official SDKs the batch succeeds
// whatever its branches did: failures are in the result's items, and an
// exceeded failure tolerance (with the default options, the first failure)
// ends it with CompletionReason FailureToleranceExceeded; call
// [BatchResult.Err] to fail on them. The returned error is for the batch
// itself (invalid options, a history it contradicts). A branch that suspends (a wait, a callback, a retry)
// suspends the whole execution unless the completion policy is already met.
//
// When the batch completes early (MinSuccessful reached, or the failure
// tolerance exceeded) while branches are still suspended, every STARTED WAIT
// inside those branches, at any depth, is cancelled in the same checkpoint that
// records the batch's outcome, so the service does not reinvoke the execution
// for them; the branches stay ItemStarted in the result. Callbacks, chained
// invokes and step retries pending in them are left as they are.
//
// A batch result whose encoding is larger than the operation payload limit (the
// serdes' MaxBytes, 256 KB by default) does not fail: the batch's CONTEXT SUCCEED
// carries a small marker and ContextOptions.ReplayChildren, so the service keeps
// the branches' CONTEXT operations in state, and replays rebuild the same result
// from their own payloads without running any branch again
// (TestBatchOverPayloadLimitReplaysChildren). A branch whose own result is over
// the limit is checkpointed like an oversized [RunInChildContext] result, and
// re-run over its recorded operations to rebuild it.
//
// The branches' CONTEXT operations are named "parallel-branch-<i>"; use
// [ParallelNamed] to name them.
func Parallel[T any](dc *Context, name string, branches []Branch[T], opts BatchOptions) (BatchResult[T], error) {
	return batch(dc, name, subParallel, subBranch, func(i int) string { return fmt.Sprintf("parallel-branch-%d", i) }, len(branches), opts, func(ctx context.Context, c *Context, i int) (T, error) {
		return branches[i](ctx, c)
	})
}

// maxNameLength is the service's limit on an operation's Name.
const maxNameLength = 256

// NameError reports a name the service cannot record or that is used twice
// where names must be unique. It matches [ErrInvalidInput].
type NameError struct {
	// Field is the offending field, e.g. "branches[2].Name".
	Field string
	// Value is the name given.
	Value string
	// Reason says what is wrong with it.
	Reason string
}

// Error names the field, the value and what is wrong with it.
func (e *NameError) Error() string {
	return fmt.Sprintf("durable: invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Unwrap makes a NameError match [ErrInvalidInput].
func (e *NameError) Unwrap() error { return ErrInvalidInput }

// checkName validates an operation name against the service's constraints on
// OperationUpdate.Name: 1 to 256 characters of printable ASCII (0x20-0x7E).
func checkName(field, name string) error {
	if name == "" {
		return &NameError{Field: field, Value: name, Reason: "empty"}
	}
	if len(name) > maxNameLength {
		return &NameError{Field: field, Value: name, Reason: fmt.Sprintf("%d bytes, more than %d", len(name), maxNameLength)}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return &NameError{Field: field, Value: name, Reason: fmt.Sprintf("byte %d is %#x, not printable ASCII", i, c)}
		}
	}
	return nil
}

// ParallelNamed is [Parallel] with a name for every branch: branch i's CONTEXT
// operation is recorded under branches[i].Name (the name the branch's items and
// errors carry too). Names must be 1 to 256 printable ASCII characters and
// unique within the call; otherwise ParallelNamed records nothing and returns a
// *[NameError] naming the field and value (wrapped by [Fatal]). Renaming a
// branch of an execution in flight is a divergence, like renaming any operation.
func ParallelNamed[T any](dc *Context, name string, branches []NamedBranch[T], opts BatchOptions) (BatchResult[T], error) {
	seen := make(map[string]int, len(branches))
	for i, b := range branches {
		field := fmt.Sprintf("branches[%d].Name", i)
		if err := checkName(field, b.Name); err != nil {
			return BatchResult[T]{}, Fatal(err)
		}
		if j, dup := seen[b.Name]; dup {
			return BatchResult[T]{}, Fatal(&NameError{Field: field, Value: b.Name, Reason: fmt.Sprintf("also the name of branches[%d]", j)})
		}
		seen[b.Name] = i
		if b.Fn == nil {
			return BatchResult[T]{}, Fatal(fmt.Errorf("%w: branches[%d].Fn (%q) is nil", ErrInvalidInput, i, b.Name))
		}
	}
	return batch(dc, name, subParallel, subBranch, func(i int) string { return branches[i].Name }, len(branches), opts, func(ctx context.Context, c *Context, i int) (T, error) {
		return branches[i].Fn(ctx, c)
	})
}

// Map runs fn for every item, each in its own child context ("map-item-<i>"),
// with the same concurrency and completion policy as [Parallel], including the
// cancellation of the waits of items left suspended when the batch completes
// early, and the same handling of a result over the operation payload limit
// (ReplayChildren; TestBatchOverPayloadLimitReplaysChildren).
func Map[I, T any](dc *Context, name string, items []I, fn func(ctx context.Context, dc *Context, item I, index int) (T, error), opts BatchOptions) (BatchResult[T], error) {
	return batch(dc, name, subMap, subIteration, func(i int) string { return fmt.Sprintf("map-item-%d", i) }, len(items), opts, func(ctx context.Context, c *Context, i int) (T, error) {
		return fn(ctx, c, items[i], i)
	})
}

// ErrBatchFailed: more branches of a Parallel or Map failed than tolerated;
// [BatchResult.Err] matches it then.
var ErrBatchFailed = errors.New("durable: batch failure tolerance exceeded")

func batch[T any](dc *Context, name, sub, itemSub string, itemName func(i int) string, n int, opts BatchOptions, run func(ctx context.Context, c *Context, i int) (T, error)) (BatchResult[T], error) {
	if opts.MaxConcurrency < 0 || opts.MinSuccessful < 0 || opts.MinSuccessful > n || opts.ToleratedFailurePercentage < 0 || opts.ToleratedFailurePercentage > 100 {
		return BatchResult[T]{}, Fatal(fmt.Errorf("%w: BatchOptions %+v for %d branches", ErrInvalidInput, opts, n))
	}
	// cancels are the waits of branches left unfinished by an early completion;
	// runChild checkpoints them with the batch's outcome.
	var cancels []types.OperationUpdate
	itemSerdes := opts.ItemSerdes
	if itemSerdes == nil {
		itemSerdes = dc.x.h.opts.Serdes
	}
	res, err := runChild(dc, name, sub, func(ctx context.Context, parent *Context) (BatchResult[T], error) {
		items := make([]BatchItem[T], n)
		begun := make([]bool, n) // the branch started: it has an item
		for i := range items {
			items[i] = BatchItem[T]{Index: i, Status: ItemStarted}
		}
		children, ids := branchContexts(parent, n)
		limit := opts.MaxConcurrency
		if limit == 0 {
			limit = max(n, 1)
		}
		var (
			mu                sync.Mutex
			changed           = sync.NewCond(&mu)
			wg                sync.WaitGroup
			succeeded, failed int
			running, inflight int // goroutines alive; branches started and not finished
			stopped           any // the first suspend or abort of a branch
			aborted           bool
		)
		tooMany := func() bool {
			return (opts.ToleratedFailures >= 0 && failed > opts.ToleratedFailures) ||
				(opts.ToleratedFailurePercentage > 0 && float64(failed)*100 > opts.ToleratedFailurePercentage*float64(n))
		}
		done := func() bool {
			return (opts.MinSuccessful > 0 && succeeded >= opts.MinSuccessful) || tooMany()
		}
		// Branches start in index order while there is room. A suspended branch
		// keeps its slot: it is still in flight, across invocations, so whether a
		// later branch starts depends on the branches and the limit, not on which
		// goroutine got to run first.
		mu.Lock()
		for i := range n {
			for inflight >= limit && running > 0 && !done() && !aborted {
				changed.Wait()
			}
			if inflight >= limit || done() || aborted {
				break
			}
			inflight++
			running++
			begun[i] = true
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				finished := false
				defer func() {
					p := recover()
					switch p.(type) {
					case nil:
					case suspend, abort:
						mu.Lock()
						if _, isAbort := p.(abort); stopped == nil || isAbort {
							stopped = p
							aborted = aborted || isAbort
						}
						mu.Unlock()
					default:
						panic(p)
					}
					mu.Lock()
					running--
					if finished {
						inflight--
					}
					changed.Broadcast()
					mu.Unlock()
				}()
				child := children[i]
				// The branch is a child context of its own: run it through the same
				// path, but with its ID fixed in advance.
				v, err := branchChild(child, itemName(i), itemSub, parent.parentID, run, i, itemSerdes)
				mu.Lock()
				defer mu.Unlock()
				finished = true
				if err != nil {
					failed++
					// The item carries the failure as the branch's FAIL recorded it,
					// so a batch rebuilt from its branches, or finished in a later
					// invocation that replays this branch, has the same item.
					var oe *OperationError
					if !errors.As(err, &oe) {
						eo := contextErrorObject(err)
						oe = &OperationError{Type: aws.ToString(eo.ErrorType), Message: aws.ToString(eo.ErrorMessage), Data: aws.ToString(eo.ErrorData)}
					}
					items[i] = BatchItem[T]{Index: i, Status: ItemFailed, Error: &OperationError{OperationID: child.parentID, Name: itemName(i),
						Type: oe.Type, Message: oe.Message, Data: oe.Data, Status: ItemFailed, SDKType: ErrorTypeChildContext}}
					return
				}
				succeeded++
				items[i] = BatchItem[T]{Index: i, Status: ItemSucceeded, Result: v}
			}(i)
		}
		mu.Unlock()
		wg.Wait()
		if !done() && stopped != nil {
			panic(stopped)
		}
		// Completed with branches still suspended: cancel their waits, so the
		// service does not reinvoke the execution for a branch nobody awaits.
		unfinished := map[string]bool{}
		res := BatchResult[T]{}
		for i, it := range items {
			if !begun[i] {
				continue
			}
			res.All = append(res.All, it)
			if it.Status == ItemStarted {
				unfinished[ids[i]] = true
			}
		}
		if len(unfinished) > 0 {
			cancels = dc.x.startedWaitsUnder(unfinished)
		}
		// The official SDKs' order: tolerance first, then every branch done,
		// then the minimum of successes.
		switch {
		case tooMany():
			res.CompletionReason = FailureToleranceExceeded
		case succeeded+failed == n:
			res.CompletionReason = AllCompleted
		case opts.MinSuccessful > 0 && succeeded >= opts.MinSuccessful:
			res.CompletionReason = MinSuccessfulReached
		default:
			res.CompletionReason = AllCompleted
		}
		// A batch whose branches failed still succeeds, as in the official
		// SDKs: the failures are in the result (BatchResult.Err).
		return res, nil
	}, func() []types.OperationUpdate { return cancels }, &rebuilder[BatchResult[T]]{
		marker: func(r BatchResult[T]) batchSummary { return summarize(r, n, sub == subParallel) },
		rebuild: func(parent *Context, m batchSummary) (BatchResult[T], error) {
			return rebuildBatch(parent, m, n, itemName, run, itemSerdes)
		},
	}, opts.Serdes)
	// The official SDKs' shape does not carry a failed item's operation: it
	// is the branch's, derived from the batch's step ID and the index.
	batchStep := dc.stepID()
	for i := range res.All {
		if idx := res.All[i].Index; idx < 0 || idx >= n {
			panic(abort{err: fmt.Errorf("%w: batch %q recorded an item of branch %d, code has %d branches", ErrNondeterministic, name, idx, n)})
		}
		if e := res.All[i].Error; e != nil && e.OperationID == "" {
			e.OperationID = OperationID(batchStep + "-" + strconv.Itoa(res.All[i].Index+1))
			e.Name = itemName(res.All[i].Index)
		}
	}
	return res, err
}

// branchContexts creates every branch's child context in index order up front,
// so the operation IDs do not depend on which goroutine runs first.
func branchContexts(parent *Context, n int) ([]*Context, []string) {
	children := make([]*Context, n)
	ids := make([]string, n)
	for i := range n {
		parent.counter++
		step := parent.stepID()
		ids[i] = OperationID(step)
		children[i] = &Context{x: parent.x, prefix: step, parentID: ids[i], rebuilding: parent.rebuilding}
	}
	return children, ids
}

// rebuildBatch returns the result of the completed batch context parent whose
// result was too large for its payload, from its branches' CONTEXT operations,
// which the service keeps in state because the batch was checkpointed with
// ReplayChildren: each finished branch's own payload holds its result (or its
// error holds the failure); a branch not finished is ItemStarted. No branch
// body runs, except that of a branch whose own result was too large for its
// payload, which is re-run over its recorded children (runChild has counted
// every operation below the batch as visited).
func rebuildBatch[T any](parent *Context, m batchSummary, n int, itemName func(i int) string, run func(ctx context.Context, c *Context, i int) (T, error), itemSerdes Serdes) (BatchResult[T], error) {
	x := parent.x
	if m.TotalCount > n || len(m.ItemStatuses) > n {
		panic(abort{err: fmt.Errorf("%w: batch %s had %d branches, code has %d", ErrNondeterministic, parent.parentID, max(m.TotalCount, len(m.ItemStatuses)), n)})
	}
	children, ids := branchContexts(parent, n)
	res := BatchResult[T]{CompletionReason: m.CompletionReason}
	for i, id := range ids {
		op := x.op(id)
		if op == nil {
			continue // never started: no item
		}
		res.All = append(res.All, BatchItem[T]{Index: i, Status: ItemStarted})
		item := &res.All[len(res.All)-1]
		name := itemName(i)
		if op.Type != types.OperationTypeContext || aws.ToString(op.Name) != name {
			panic(abort{err: fmt.Errorf("%w: operation %s is %s %q in history, code asks for CONTEXT %q", ErrNondeterministic, id, op.Type, aws.ToString(op.Name), name)})
		}
		switch op.Status {
		case types.OperationStatusSucceeded:
			var v T
			switch {
			case op.ContextDetails != nil && aws.ToBool(op.ContextDetails.ReplayChildren):
				v, _ = rerunBranch(children[i], id, name, run, i)
			case op.ContextDetails != nil && op.ContextDetails.Result != nil:
				if err := parent.deserialize(itemSerdes, KindContext, id, name, op.ContextDetails.Result, &v); err != nil {
					return BatchResult[T]{}, err
				}
			}
			*item = BatchItem[T]{Index: i, Status: ItemSucceeded, Result: v}
		case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
			// The item as the live run built it: the message is the one recorded.
			oe := operationError(op)
			oe.SDKType, oe.Status = ErrorTypeChildContext, ItemFailed
			*item = BatchItem[T]{Index: i, Status: ItemFailed, Error: oe}
		}
	}
	return res, nil
}

// finished reports whether a context with this status is over: its body does
// not run again.
func finished(s types.OperationStatus) bool {
	switch s {
	case types.OperationStatusSucceeded, types.OperationStatusFailed, types.OperationStatusCancelled,
		types.OperationStatusTimedOut, types.OperationStatusStopped:
		return true
	}
	return false
}

// visitUnder counts every operation of history below the context root as
// visited: root is finished, its result replays from its payload or is rebuilt
// from its branches, and its body does not run again. Below a finished context
// the fake's state holds nothing unless it has ReplayChildren; the checkpoint
// server's invocation input holds everything.
func (dc *Context) visitUnder(root string) {
	if dc.rebuilding {
		return // the context being rebuilt counted its whole subtree
	}
	x := dc.x
	x.mu.Lock()
	defer x.mu.Unlock()
	under := func(id string) bool { return id == root }
	for id := range x.history {
		if op := x.ops[id]; op != nil {
			if a, _ := x.ancestor(op, under); a != "" {
				x.visited++
			}
		}
	}
	x.replaying.Store(x.visited < len(x.history))
}

// branchChild runs one branch as the CONTEXT operation child.parentID, a child
// of the batch's own context.
func branchChild[T any](child *Context, name, sub, batchID string, run func(ctx context.Context, c *Context, i int) (T, error), i int, serdes Serdes) (T, error) {
	var zero T
	x := child.x
	id := child.parentID
	op := x.op(id)
	if op != nil {
		if err := matches(op, id, child.prefix, types.OperationTypeContext, sub, name); err != nil {
			panic(abort{err: err})
		}
	}
	if !child.rebuilding {
		x.mu.Lock()
		if x.history[id] {
			x.visited++
		}
		x.replaying.Store(x.visited < len(x.history))
		x.mu.Unlock()
	}
	upd := func(action types.OperationAction) types.OperationUpdate {
		return types.OperationUpdate{Id: aws.String(id), Name: aws.String(name), Type: types.OperationTypeContext,
			Action: action, SubType: aws.String(sub), ParentId: aws.String(batchID)}
	}
	if op != nil {
		if finished(op.Status) {
			child.visitUnder(id)
		}
		switch op.Status {
		case types.OperationStatusSucceeded:
			var v T
			if op.ContextDetails != nil && aws.ToBool(op.ContextDetails.ReplayChildren) {
				return rerunBranch(child, id, name, run, i)
			}
			if op.ContextDetails == nil || op.ContextDetails.Result == nil {
				return zero, nil
			}
			if err := child.deserialize(serdes, KindContext, id, name, op.ContextDetails.Result, &v); err != nil {
				return zero, err
			}
			return v, nil
		case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
			return zero, operationError(op)
		}
	} else {
		child.checkpoint(upd(types.OperationActionStart))
	}
	v, err := run(withInfo(x.ctx, Info{ExecutionArn: x.arn, OperationID: id, OperationName: name}), child, i)
	if err == nil {
		var payload *string
		payload, err = child.serialize(serdes, KindContext, id, name, v)
		u := upd(types.OperationActionSucceed)
		switch {
		case err == nil:
			u.Payload = payload
			v, err = roundTrip(child, serdes, KindContext, id, name, payload, v)
		case errors.Is(err, checkpoint.ErrTooLarge):
			// Like RunInChildContext: replays run the branch again over its
			// children, which the service keeps.
			u.Payload = aws.String("")
			u.ContextOptions = &types.ContextOptions{ReplayChildren: aws.Bool(true)}
			err = nil
		}
		if err == nil {
			child.checkpoint(u)
			return v, nil
		}
	}
	if x.ctx.Err() != nil && errors.Is(err, x.ctx.Err()) {
		panic(abort{err: err})
	}
	u := upd(types.OperationActionFail)
	u.Error = contextErrorObject(err)
	child.checkpoint(u)
	return zero, liveFailure(id, name, ErrorTypeChildContext, u.Error, err)
}

// rerunBranch rebuilds branch i's result, too large for its payload, by
// running it again over its recorded children.
func rerunBranch[T any](child *Context, id, name string, run func(ctx context.Context, c *Context, i int) (T, error), i int) (T, error) {
	return rerun(child.x, child, id, name, func(ctx context.Context, c *Context) (T, error) { return run(ctx, c, i) })
}

// WaitForCondition polls check until it reports done, with the state it returns
// carried from one check to the next through checkpoints. Between checks the
// execution suspends for wait(n) (n: the number of checks so far; nil: 1s,
// 2s, 4s, … capped at 5 minutes); each check is one live attempt of a STEP
// operation (subtype WaitForCondition) whose RETRY checkpoints the state. An
// error from check fails the operation.
func WaitForCondition[S any](dc *Context, name string, initial S, check func(ctx context.Context, state S) (S, bool, error), wait func(checks int) time.Duration) (S, error) {
	return WaitForConditionWith(dc, name, initial, ConditionOptions{Wait: wait}, check)
}

// ConditionOptions configures [WaitForConditionWith], as the official SDKs'
// waitForCondition configuration does.
type ConditionOptions struct {
	// Wait is the delay after check number n (1, 2, …) before the next check;
	// nil: 1s, 2s, 4s, … capped at 5 minutes. Delays are rounded up to whole
	// seconds, at least one, as the service schedules them.
	Wait func(checks int) time.Duration
	// Serdes encodes the state between checks and the final result; nil:
	// Options.Serdes.
	Serdes Serdes
}

// WaitForConditionWith is [WaitForCondition] with its delays and serdes set
// in co.
func WaitForConditionWith[S any](dc *Context, name string, initial S, co ConditionOptions, check func(ctx context.Context, state S) (S, bool, error)) (S, error) {
	var zero S
	wait := co.Wait
	if wait == nil {
		wait = func(n int) time.Duration { return min(time.Second<<min(n-1, 20), 5*time.Minute) }
	}
	serdes := co.Serdes
	if serdes == nil {
		serdes = dc.x.h.opts.Serdes
	}
	id, op := dc.next(types.OperationTypeStep, subCondition, name)
	attempt, state, started := 1, initial, false
	if op != nil {
		if op.StepDetails != nil {
			attempt = int(op.StepDetails.Attempt) + 1
		}
		switch op.Status {
		case types.OperationStatusSucceeded:
			var v S
			if op.StepDetails == nil || op.StepDetails.Result == nil {
				return zero, nil
			}
			if err := dc.deserialize(serdes, KindCondition, id, name, op.StepDetails.Result, &v); err != nil {
				return zero, err
			}
			return v, nil
		case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
			return zero, operationError(op)
		case types.OperationStatusPending:
			panic(suspend{})
		case types.OperationStatusStarted:
			started = true
		}
		if op.StepDetails != nil && op.StepDetails.Result != nil {
			if err := dc.deserialize(serdes, KindCondition, id, name, op.StepDetails.Result, &state); err != nil {
				return zero, err
			}
		}
	}
	if !started {
		dc.checkpoint(dc.update(id, name, types.OperationTypeStep, subCondition, types.OperationActionStart))
	}
	type outcome struct {
		s    S
		done bool
	}
	out, err := runAttempt(dc, id, name, attempt, func(ctx context.Context) (outcome, error) {
		s, ok, err := check(ctx, state)
		return outcome{s, ok}, err
	})
	var payload *string
	if err == nil {
		payload, err = dc.serialize(serdes, KindCondition, id, name, out.s)
	}
	if err == nil && out.done {
		// The live result comes back through the serdes, as a step's does, so
		// the live run and its replays see the same value.
		out.s, err = roundTrip(dc, serdes, KindCondition, id, name, payload, out.s)
	}
	if err != nil {
		if dc.x.ctx.Err() != nil && errors.Is(err, dc.x.ctx.Err()) {
			panic(abort{err: err})
		}
		u := dc.update(id, name, types.OperationTypeStep, subCondition, types.OperationActionFail)
		u.Error = errorObject(err)
		dc.checkpoint(u)
		dc.x.metrics.finished(dc.x.ctx, name, "failed")
		return zero, liveFailure(id, name, ErrorTypeWaitForCondition, u.Error, err)
	}
	if out.done {
		u := dc.update(id, name, types.OperationTypeStep, subCondition, types.OperationActionSucceed)
		u.Payload = payload
		dc.checkpoint(u)
		dc.x.metrics.finished(dc.x.ctx, name, "succeeded")
		return out.s, nil
	}
	u := dc.update(id, name, types.OperationTypeStep, subCondition, types.OperationActionRetry)
	u.Payload = payload
	u.StepOptions = &types.StepOptions{NextAttemptDelaySeconds: aws.Int32(int32(max(math.Ceil(wait(attempt).Seconds()), 1)))}
	dc.checkpoint(u)
	panic(suspend{})
}

// Invoke starts the durable or ordinary Lambda function functionName (a name,
// ARN or qualified ARN) with input as its payload, as a CHAINED_INVOKE operation,
// and suspends until the service records its outcome, which it decodes into T.
// The invoked function runs once per execution: replays return its recorded
// result. A failed, timed-out or stopped invocation returns an *[OperationError].
func Invoke[T any](dc *Context, name, functionName string, input any) (T, error) {
	return InvokeWith[T](dc, name, functionName, input, InvokeOptions{})
}

// InvokeOptions configures [InvokeWith], as the official SDKs' invoke
// configuration does.
type InvokeOptions struct {
	// PayloadSerdes encodes the input handed to the invoked function; nil:
	// JSON as JSON.stringify writes it.
	PayloadSerdes Serdes
	// ResultSerdes decodes the invoked function's result; nil: JSON.
	ResultSerdes Serdes
}

// InvokeWith is [Invoke] with the input's and the result's serdes set in io.
func InvokeWith[T any](dc *Context, name, functionName string, input any, io InvokeOptions) (T, error) {
	var zero T
	id, op := dc.next(types.OperationTypeChainedInvoke, subInvoke, name)
	if op == nil {
		u := dc.update(id, name, types.OperationTypeChainedInvoke, subInvoke, types.OperationActionStart)
		if io.PayloadSerdes != nil {
			p, err := dc.serialize(io.PayloadSerdes, KindInvokeInput, id, name, input)
			if err != nil {
				return zero, Fatal(err)
			}
			u.Payload = p
		} else {
			b, err := marshalPlain(input) // as JSON.stringify writes it: no HTML escaping
			if err != nil {
				return zero, Fatal(fmt.Errorf("durable: invoke %s (%s) input: %w", id, name, err))
			}
			u.Payload = aws.String(string(b))
		}
		u.ChainedInvokeOptions = &types.ChainedInvokeOptions{FunctionName: aws.String(functionName)}
		dc.checkpoint(u)
		op = dc.x.op(id)
		if op == nil {
			panic(suspend{})
		}
	}
	switch op.Status {
	case types.OperationStatusSucceeded:
		var v T
		if op.ChainedInvokeDetails == nil || op.ChainedInvokeDetails.Result == nil {
			return zero, nil
		}
		if io.ResultSerdes != nil {
			if err := dc.deserialize(io.ResultSerdes, KindInvokeResult, id, name, op.ChainedInvokeDetails.Result, &v); err != nil {
				return zero, err
			}
			return v, nil
		}
		dec := json.NewDecoder(stringsReader(*op.ChainedInvokeDetails.Result))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return zero, fmt.Errorf("durable: invoke %s (%s) result: %w", id, name, err)
		}
		return v, nil
	case types.OperationStatusFailed, types.OperationStatusCancelled, types.OperationStatusTimedOut, types.OperationStatusStopped:
		return zero, operationError(op)
	}
	panic(suspend{})
}
