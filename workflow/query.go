package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cairn-go/cairn/worlds"
)

// ErrQueryNotFound: a query named a handler the run's code has not set (at its
// current position). Matched by *[QueryNotFoundError].
var ErrQueryNotFound = errors.New("workflow: no such query handler")

// ErrQueryFailed: a query handler returned an error or panicked, or its
// argument did not decode into the handler's argument type. Matched by
// *[QueryError].
var ErrQueryFailed = errors.New("workflow: query failed")

// QueryNotFoundError reports a query of a handler the run's code has not set
// by its current position. Known lists the handlers it has set, sorted. It
// matches [ErrQueryNotFound] and [worlds.ErrNotFound] (404 over the RPC).
type QueryNotFoundError struct {
	RunID string
	Name  string
	Known []string
}

func (e *QueryNotFoundError) Error() string {
	known := "it has set none"
	if len(e.Known) > 0 {
		known = "it has set " + strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("workflow: run %s has no query handler %q (%s)", e.RunID, e.Name, known)
}

// Is matches [ErrQueryNotFound] and [worlds.ErrNotFound].
func (e *QueryNotFoundError) Is(target error) bool {
	return target == ErrQueryNotFound || target == worlds.ErrNotFound
}

// QueryError reports a query its handler could not answer: the handler
// returned Err, or panicked, or the argument or the result did not convert.
// It matches [ErrQueryFailed] and, like Temporal's failed queries,
// [worlds.ErrInvalidArgument] (400 over the RPC); errors.As reaches Err.
type QueryError struct {
	RunID string
	Name  string
	Err   error
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("workflow: query %q of run %s: %v", e.Name, e.RunID, e.Err)
}

// Unwrap returns the handler's error.
func (e *QueryError) Unwrap() error { return e.Err }

// Is matches [ErrQueryFailed] and [worlds.ErrInvalidArgument].
func (e *QueryError) Is(target error) bool {
	return target == ErrQueryFailed || target == worlds.ErrInvalidArgument
}

// queryFunc is a query handler on JSON.
type queryFunc func(arg json.RawMessage) (json.RawMessage, error)

// SetQueryHandler sets the handler that answers queries named name of this
// run with the code's live state, replacing any handler set before under
// that name:
//
//	stage := "reserving"
//	if err := workflow.SetQueryHandler(ctx, "stage", func(struct{}) (string, error) { return stage, nil }); err != nil {
//		return err
//	}
//
// [Query] (and the RPC's runs.query, cairn runs query, the web UI) calls fn
// with the query's argument decoded into A, at the run's current position:
// after the code has run as far as the run's log lets it, before any of it
// that waits on what the log does not hold yet. fn must only read: it runs
// while the workflow code is suspended, on another goroutine, and can call no
// workflow operation (it gets no [Context]). Nothing a query does is recorded,
// so setting a handler is not an operation either: adding one to code of runs
// in flight is safe.
//
// An empty name or a nil fn is a *[ConfigError].
func SetQueryHandler[A, R any](ctx Context, name string, fn func(A) (R, error)) error {
	e, err := execOf(ctx)
	if err != nil {
		return err
	}
	e.enter()
	switch {
	case name == "":
		return &ConfigError{Field: "SetQueryHandler name", Value: `""`, Reason: "must not be empty"}
	case fn == nil:
		return &ConfigError{Field: "SetQueryHandler fn", Value: "nil", Reason: "required; a handler cannot be removed, only replaced"}
	}
	if e.queries == nil {
		e.queries = map[string]queryFunc{}
	}
	limit := e.rt.maxPayload
	e.queries[name] = func(raw json.RawMessage) (json.RawMessage, error) {
		var arg A
		if err := decode(raw, &arg); err != nil {
			return nil, &SerializationError{What: "query " + quote(name) + " argument", Err: err}
		}
		out, err := fn(arg)
		if err != nil {
			return nil, err
		}
		return encode("query "+quote(name)+" result", out, limit)
	}
	return nil
}

// Query asks the run runID what its query handler name (set with
// [SetQueryHandler]) answers for arg, and decodes the answer into R:
//
//	stage, err := workflow.Query[string](ctx, client, runID, "stage", nil)
//
// The run's code answers at its current position: the client's run cache
// answers when it holds the run's execution at the end of its log; otherwise
// the client replays the run's log with the workflow's code in this process,
// up to where the code waits, and aborts the replay after the answer. A query
// reads only: it records nothing in the log, runs no step, and queues
// nothing. A finished run is replayed to its end and answers with the state
// its code ended in.
//
// The client must know the workflow's code: register it with
// [Config].Workflows, or run its deliveries through [Client.Runner] or
// [Client.Serve]. An unknown run returns an error matching
// worlds.ErrRunNotFound; an unregistered workflow an *worlds.UnknownWorkflowError;
// a name the code has set no handler for a *[QueryNotFoundError]; a handler
// that fails a *[QueryError]; code that fails to replay (a panic,
// nondeterminism, a deadlock) an error matching [ErrWorkflowCode].
func Query[R any](ctx context.Context, c *Client, runID, name string, arg any) (R, error) {
	var zero R
	if c == nil {
		return zero, &ConfigError{Field: "client", Value: nil, Reason: "required"}
	}
	raw, err := encode("query "+quote(name)+" argument", arg, c.eng.maxPayload)
	if err != nil {
		return zero, err
	}
	out, err := worlds.QueryRun(ctx, c.eng.world, c.queryRunners(), runID, name, raw)
	if err != nil {
		return zero, err
	}
	var r R
	if err := decode(out, &r); err != nil {
		return zero, &QueryError{RunID: runID, Name: name, Err: &SerializationError{What: "query " + quote(name) + " result", Err: err}}
	}
	return r, nil
}

// queryRunners are the runners the client knows the code of, with its engine.
func (c *Client) queryRunners() worlds.Runner {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &clientQuerier{c: c, runners: slices.Clone(c.known)}
}

// know remembers runners whose workflows' code the client can run for
// queries; a runner it knows already (Client.Runner called per delivery) is
// not added again.
func (c *Client) know(r worlds.Runner) {
	if r == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.known {
		if sameRunner(k, r) {
			return
		}
	}
	c.known = append(c.known, r)
}

// sameRunner reports whether a and b are the same runner; runners of a type
// that cannot be compared never are.
func sameRunner(a, b worlds.Runner) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// clientQuerier answers queries with the first known runner of the run's
// workflow that implements worlds.Querier, with the client's engine.
type clientQuerier struct {
	c       *Client
	runners []worlds.Runner
}

func (q *clientQuerier) Workflows() []string {
	var names []string
	for _, r := range q.runners {
		names = append(names, r.Workflows()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func (q *clientQuerier) Run(context.Context, worlds.World, worlds.Delivery) error {
	return errors.New("workflow: a query runner runs no deliveries")
}

func (q *clientQuerier) Query(ctx context.Context, w worlds.World, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	ctx = context.WithValue(ctx, engineKey{}, q.c.eng)
	for _, r := range q.runners {
		if !slices.Contains(r.Workflows(), run.WorkflowName) {
			continue
		}
		if qr, ok := r.(worlds.Querier); ok {
			return qr.Query(ctx, w, run, name, arg)
		}
	}
	return nil, fmt.Errorf("workflow: query run %s: %w (register it with Config.Workflows, Client.Runner or Client.Serve)",
		run.RunID, &worlds.UnknownWorkflowError{Name: run.WorkflowName, Known: q.Workflows()})
}

// Query implements [worlds.Querier] for the workflow's runs.
func (r *runner[I, O]) Query(ctx context.Context, w worlds.World, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	if run.WorkflowName != r.wfName {
		return nil, fmt.Errorf("%w: run %s of %q queried with the runner of %q", ErrUnknownWorkflow, run.RunID, run.WorkflowName, r.wfName)
	}
	return engineFrom(ctx, w).query(ctx, r, run, name, arg)
}

// Query implements [worlds.Querier] with the client's configuration.
func (r *configured) Query(ctx context.Context, w worlds.World, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	q, ok := r.inner.(worlds.Querier)
	if !ok {
		return nil, fmt.Errorf("%w: the runner of %q (%T) does not answer queries", worlds.ErrNoRunner, run.WorkflowName, r.inner)
	}
	return q.Query(context.WithValue(ctx, engineKey{}, r.eng), w, run, name, arg)
}

// query answers a query of run, which the caller read just now, from the run
// cache when it holds the run at the end of its log, else by replaying the
// log in query mode. Nothing is written either way.
func (e *engine) query(ctx context.Context, f flow, run worlds.Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	if e.cache != nil && !run.Status.Terminal() {
		if x := e.cache.take(run.RunID, e.world); x != nil {
			if x.isParked() && x.stored == run.EventCount && x.hist.seq == x.stored {
				out, err := x.answer(name, arg)
				e.cache.restore(run.RunID, e.world, x)
				return out, err
			}
			// Behind the log (or ahead of it, with an outcome still to store):
			// the run's next delivery replays it anyway.
			e.cache.discard(x, EvictReplaced)
		}
	}
	events, err := worlds.AllEvents(ctx, e.world, run.RunID)
	if err != nil {
		return nil, err
	}
	x := newExecution(e, e.world, buildHistory(run, events), modeQuery, "")
	x.run(withInfo(ctx, Info{RunID: run.RunID, WorkflowName: run.WorkflowName, Replaying: true}), f)
	defer x.abort()
	switch x.outcome() {
	case outSuspended, outReturned:
		return x.answer(name, arg)
	}
	cause, _ := x.codeError()
	return nil, fmt.Errorf("workflow: query %q of run %s: replaying its code: %w: %w", name, run.RunID, ErrWorkflowCode, cause)
}

// answer calls the query handler name of a parked or ended execution.
func (x *execution) answer(name string, arg json.RawMessage) (out json.RawMessage, err error) {
	fn, ok := x.queries[name]
	if !ok {
		return nil, &QueryNotFoundError{RunID: x.runID, Name: name, Known: slices.Sorted(maps.Keys(x.queries))}
	}
	defer func() {
		if r := recover(); r != nil {
			err = &QueryError{RunID: x.runID, Name: name, Err: &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}}
		}
	}()
	out, err = fn(arg)
	if err != nil {
		return nil, &QueryError{RunID: x.runID, Name: name, Err: err}
	}
	return out, nil
}
