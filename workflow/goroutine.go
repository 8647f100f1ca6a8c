package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ErrNotWorkflowGoroutine: a workflow operation was called from a goroutine
// other than the one the runtime runs the workflow's Run on, such as a plain
// go statement inside Run. Workflow code is replayed on one goroutine, in
// order; start parallel work with [Go] (steps) or [StartChild] (runs) instead.
// Matched by *[GoroutineError].
var ErrNotWorkflowGoroutine = errors.New("workflow: workflow operation called from a goroutine that is not the workflow's own")

// GoroutineError is what a workflow operation returns when it is called from a
// goroutine that is not its workflow's own. It matches
// [ErrNotWorkflowGoroutine], and also [ErrNotInWorkflow], which such calls
// returned before, or hung.
type GoroutineError struct {
	// Call names the operation, such as "workflow.Step" or "workflow.Timer.Get".
	Call string
}

func (e *GoroutineError) Error() string {
	return fmt.Sprintf("workflow: %s called from a goroutine that is not the workflow's own: "+
		"workflow code runs on one goroutine; use workflow.Go for parallel steps", e.Call)
}

// Is matches [ErrNotWorkflowGoroutine] and [ErrNotInWorkflow].
func (e *GoroutineError) Is(target error) bool {
	return target == ErrNotWorkflowGoroutine || target == ErrNotInWorkflow
}

// DefaultDeadlockTimeout is how long the runtime waits for workflow code to hand
// control back when [Config.DeadlockTimeout] is zero.
const DefaultDeadlockTimeout = 5 * time.Second

// DeadlockError reports workflow code that kept its goroutine past
// [Config.DeadlockTimeout] without reaching a workflow operation or returning:
// it blocks on something the runtime cannot see (a channel, a mutex,
// time.Sleep, a network call outside a step) or loops. The delivery gives up
// on the goroutine, which is the workflow code's to end: the runtime cannot
// stop it. If it later calls a workflow operation, that call ends it
// ([runtime.Goexit]); if it stays blocked, it stays in memory. The run is
// handled as for a panic (see [CodeErrorPolicy]). It matches
// [ErrWorkflowCode].
type DeadlockError struct {
	RunID   string
	Timeout time.Duration
	// Stack is the stack of the workflow goroutine when the runtime gave up.
	Stack string
}

func (e *DeadlockError) Error() string {
	return fmt.Sprintf("workflow: run %s: workflow code did not yield within %s: it is blocked outside workflow operations "+
		"(a channel, a mutex, time.Sleep, I/O outside a step?) or loops", e.RunID, e.Timeout)
}

// Is matches [ErrWorkflowCode].
func (e *DeadlockError) Is(target error) bool { return target == ErrWorkflowCode }

// goroutineID returns the ID of the calling goroutine, read from the header of
// its stack trace ("goroutine 42 [running]:"), which the runtime has printed in
// this form since Go 1.0. IDs are never reused within a process.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, _ = bytes.CutPrefix(b, []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// goroutineStack returns the stack trace of goroutine id, or "" when it has
// ended. It reads every goroutine's stack, so it is for error paths only.
func goroutineStack(id uint64) string {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for size := 64 << 10; size <= 16<<20; size *= 4 {
		buf := make([]byte, size)
		n := runtime.Stack(buf, true)
		all := buf[:n]
		if i := bytes.Index(all, head); i >= 0 {
			s := all[i:]
			if j := bytes.Index(s, []byte("\n\n")); j >= 0 {
				return string(s[:j])
			}
			if n < size {
				return string(s)
			}
		} else if n < size {
			return ""
		}
	}
	return ""
}

// pkgPrefix is how the runtime names this package's functions in stack frames.
var pkgPrefix = reflect.TypeFor[execution]().PkgPath() + "."

// apiCall names the workflow operation its caller is part of: the outermost
// exported function of this package in the calling goroutine's stack, so a call
// to Step reports "workflow.Step" rather than the Go it calls. Error paths only.
func apiCall() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	name := ""
	for {
		f, more := frames.Next()
		rest, ok := strings.CutPrefix(f.Function, pkgPrefix)
		if !ok {
			break
		}
		if n, exported := exportedName(rest); exported {
			name = n
		} else if name != "" {
			break // past the API, into the caller's own code in this package
		}
		if !more {
			break
		}
	}
	if name == "" {
		return "a workflow operation"
	}
	return "workflow." + name
}

// exportedName turns a frame's function name within the package ("Step[...]",
// "(*Future[...]).Get") into the name a user calls ("Step", "Future.Get"), and
// reports whether every part of it is exported.
func exportedName(fn string) (string, bool) {
	// Type arguments ("[go.shape.string]") hold dots of their own: drop them first.
	var b strings.Builder
	depth := 0
	for _, r := range fn {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	var parts []string
	for _, p := range strings.Split(b.String(), ".") {
		p = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(p, "("), "*"), ")")
		if p == "" || p[0] < 'A' || p[0] > 'Z' {
			return "", false
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "."), len(parts) > 0
}

// ownerCheck returns a *GoroutineError when the caller is not e's workflow
// goroutine.
func (e *execution) ownerCheck() error {
	if goroutineID() != e.goid {
		return &GoroutineError{Call: apiCall()}
	}
	return nil
}

// execFor is execOf for an operation on a value (a future, a timer, a hook)
// that belongs to execution owner.
func execFor(ctx Context, owner *execution) (*execution, error) {
	e, err := execOf(ctx)
	if err != nil {
		return nil, err
	}
	if e != owner {
		return nil, ErrNotInWorkflow
	}
	return e, nil
}

// turnTimeout is how long the delivery waits for one turn of workflow code.
func (e *execution) turnTimeout() time.Duration {
	if e.rt.deadlock > 0 {
		return e.rt.deadlock
	}
	return DefaultDeadlockTimeout
}

// giveUp abandons the workflow goroutine, which did not hand control back in
// time (cause is a *DeadlockError) or whose delivery ended meanwhile (cause is
// the context's error). From here on the delivery goroutine touches nothing
// the workflow goroutine writes; the workflow goroutine ends itself at its next
// operation or park.
func (e *execution) giveUp(cause error) {
	if e.hung == nil {
		e.hung = cause
		close(e.abandon)
	}
}

// waitTurn waits for the workflow goroutine to park or end, at most for the
// deadlock timeout and never past ctx's end; it gives up on the goroutine then.
func (e *execution) waitTurn(ctx context.Context) {
	t := time.NewTimer(e.turnTimeout())
	defer t.Stop()
	select {
	case <-e.parked:
	case <-e.done:
	case <-t.C:
		e.giveUp(&DeadlockError{RunID: e.runID, Timeout: e.turnTimeout(), Stack: goroutineStack(e.goid)})
	case <-ctx.Done():
		e.giveUp(context.Cause(ctx))
	}
}

// outcome is how the last turn of workflow code ended, as the delivery sees it:
// outHung once the goroutine was given up on.
func (e *execution) outcome() outcomeKind {
	if e.hung != nil {
		return outHung
	}
	return e.kind
}
