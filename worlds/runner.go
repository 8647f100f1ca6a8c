package worlds

import (
	"context"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Runner executes deliveries for the workflows it knows. The workflow runtime
// provides Runners (workflow.Use); a World's worker entry point hands each received
// delivery to one.
type Runner interface {
	// Workflows lists the workflow names this runner executes.
	Workflows() []string
	// Run executes one delivery against w. A nil error acknowledges the delivery; an
	// error asks for redelivery later.
	Run(ctx context.Context, w World, d Delivery) error
}

// RunnerSet dispatches deliveries to the runner registered for their workflow.
type RunnerSet struct {
	byName map[string]Runner
	names  []string
}

// Runners combines runners into one that dispatches by QueueInput.WorkflowName.
// Registering two runners for one workflow name panics, like registering one
// http.ServeMux pattern twice: it is a programming error found at start-up.
func Runners(runners ...Runner) *RunnerSet {
	s := &RunnerSet{byName: map[string]Runner{}}
	for _, r := range runners {
		if r == nil {
			panic("worlds: Runners: nil runner")
		}
		for _, name := range r.Workflows() {
			if _, dup := s.byName[name]; dup {
				panic(fmt.Sprintf("worlds: Runners: workflow %q registered twice", name))
			}
			s.byName[name] = r
			s.names = append(s.names, name)
		}
	}
	sort.Strings(s.names)
	return s
}

// Workflows lists every registered workflow name, sorted.
func (s *RunnerSet) Workflows() []string { return append([]string(nil), s.names...) }

// Lookup returns the runner for a workflow name.
func (s *RunnerSet) Lookup(name string) (Runner, bool) {
	r, ok := s.byName[name]
	return r, ok
}

// Run dispatches d to the runner of its workflow. Expiry deliveries carry no
// workflow name and go to any runner; with none registered, or for an unknown
// workflow, it returns an error wrapping [ErrNoRunner].
func (s *RunnerSet) Run(ctx context.Context, w World, d Delivery) error {
	name := d.Input.WorkflowName
	r, ok := s.byName[name]
	if !ok && d.Input.Kind == DeliverExpire && len(s.names) > 0 {
		r, ok = s.byName[s.names[0]], true
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoRunner, name)
	}
	return r.Run(ctx, w, d)
}

// Namer lets a workflow type choose the name its runs are recorded under.
type Namer interface {
	WorkflowName() string
}

// WorkflowName returns the name runs of workflow type W are recorded under: the
// result of W's WorkflowName method when W implements [Namer], otherwise
// "<package name>.<type name>" (for example "flows.GenerateReport"). Changing it
// orphans runs in flight, so pin it with a WorkflowName method before renaming a type.
func WorkflowName[W any]() string {
	var zero W
	if n, ok := any(zero).(Namer); ok {
		return n.WorkflowName()
	}
	if n, ok := any(&zero).(Namer); ok {
		return n.WorkflowName()
	}
	return TypeWorkflowName(reflect.TypeFor[W]())
}

// TypeWorkflowName is [WorkflowName] for a reflect.Type, for runtimes that hold
// workflows as values.
func TypeWorkflowName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if i := strings.IndexByte(name, '['); i >= 0 { // generic instantiation
		name = name[:i]
	}
	if pkg := t.PkgPath(); pkg != "" {
		return path.Base(pkg) + "." + name
	}
	return name
}

// RouteEntry sends the runs of one workflow to a named queue.
type RouteEntry struct {
	Workflow string
	Queue    string
}

// Route routes the runs of workflow W to the named queue.
func Route[W any](queue string) RouteEntry {
	return RouteEntry{Workflow: WorkflowName[W](), Queue: queue}
}

// RouteTable maps workflow names to queue names. The zero value routes nothing.
type RouteTable struct {
	entries map[string]string
	err     error
}

// Routes builds a route table. A workflow routed twice to different queues makes
// the table invalid; Worlds report that from their constructors through [RouteTable.Err].
func Routes(entries ...RouteEntry) RouteTable {
	t := RouteTable{entries: make(map[string]string, len(entries))}
	for _, e := range entries {
		if e.Workflow == "" || e.Queue == "" {
			t.err = &ArgumentError{Field: "Route", Value: fmt.Sprintf("%+v", e), Reason: "workflow and queue are required"}
			continue
		}
		if q, dup := t.entries[e.Workflow]; dup && q != e.Queue {
			t.err = &ArgumentError{Field: "Route", Value: e.Workflow, Reason: fmt.Sprintf("routed to both %q and %q", q, e.Queue)}
			continue
		}
		t.entries[e.Workflow] = e.Queue
	}
	return t
}

// Queue returns the queue name for a workflow, and whether it is routed.
func (t RouteTable) Queue(workflow string) (string, bool) {
	q, ok := t.entries[workflow]
	return q, ok
}

// Entries returns the routes sorted by workflow name.
func (t RouteTable) Entries() []RouteEntry {
	out := make([]RouteEntry, 0, len(t.entries))
	for w, q := range t.entries {
		out = append(out, RouteEntry{Workflow: w, Queue: q})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workflow < out[j].Workflow })
	return out
}

// Err reports an invalid table built by [Routes].
func (t RouteTable) Err() error { return t.err }

type handOffKey struct{}

// WithHandOff returns ctx carrying the time after which a Runner should queue
// new work rather than run it in this delivery: entry points with a deadline
// set it (the AWS World's Queue handler uses half the Lambda invocation's time),
// so work started late does not die with the invocation.
func WithHandOff(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, handOffKey{}, at)
}

// HandOffAt returns the hand-off time set by [WithHandOff]; ok is false when the
// entry point set none.
func HandOffAt(ctx context.Context) (at time.Time, ok bool) {
	at, ok = ctx.Value(handOffKey{}).(time.Time)
	return at, ok
}
