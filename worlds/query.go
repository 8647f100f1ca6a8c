package worlds

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Querier is implemented by a [Runner] that answers queries of the live state
// of its workflows' runs (workflow.Use does, for the handlers the workflow code
// sets with workflow.SetQueryHandler). Query runs the code of run, which it
// read just before, up to the run's current position against w, without
// writing anything, and returns what the handler named returns for arg, both
// as JSON. Entry points that know runs only by ID (the RPC's runs.query, the
// CLI, the web UI) call it through a [RunnerSet].
type Querier interface {
	Query(ctx context.Context, w World, run Run, name string, arg json.RawMessage) (json.RawMessage, error)
}

// Query answers a query of run with the runner registered for its workflow.
// A workflow no runner is registered for is an *[UnknownWorkflowError]; one
// whose runner cannot answer queries an error matching [ErrNoRunner].
func (s *RunnerSet) Query(ctx context.Context, w World, run Run, name string, arg json.RawMessage) (json.RawMessage, error) {
	r, ok := s.byName[run.WorkflowName]
	if !ok {
		return nil, &UnknownWorkflowError{Name: run.WorkflowName, Known: slices.Clone(s.names)}
	}
	q, ok := r.(Querier)
	if !ok {
		return nil, fmt.Errorf("%w: the runner of %q (%T) does not answer queries", ErrNoRunner, run.WorkflowName, r)
	}
	return q.Query(ctx, w, run, name, arg)
}

// QueryRun reads the run and answers the query named with runners, as every
// entry point does: an unknown run matches [ErrRunNotFound]; runners that do
// not implement [Querier], or nil, match [ErrNoRunner].
func QueryRun(ctx context.Context, w World, runners Runner, runID, name string, arg json.RawMessage) (json.RawMessage, error) {
	if name == "" {
		return nil, &ArgumentError{Field: "name", Value: `""`, Reason: "a query needs the name of its handler"}
	}
	if len(arg) > 0 {
		if err := ValidateJSON("arg", arg); err != nil {
			return nil, err
		}
	}
	run, err := w.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	q, ok := runners.(Querier)
	if !ok || runners == nil {
		return nil, fmt.Errorf("%w: queries run the workflow's code, and none is registered here for %q", ErrNoRunner, run.WorkflowName)
	}
	return q.Query(ctx, w, run, name, arg)
}
