package workflowtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// TB is the part of testing.TB that [Replay] reports through; *testing.T and
// *testing.B implement it.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Replay re-executes workflow w against a recorded history and reports, with
// t.Errorf, where the code no longer matches it: the message, that of a
// *[workflow.NondeterminismError], names the position, the operation the history
// recorded there and the one the code asked for.
//
// history is a run's log as `cairn inspect events <run ID> --json --all` prints it
// (a page object whose items are the events), or a JSON array of events. No step
// runs: recorded results are returned from the history. A history that ends
// mid-run is replayed as far as it goes; code that asks for something the history
// has not recorded yet is then not an error, since the run would do that next.
// A history that ends with the run's end must be matched by the code ending
// there too, with the same status. Malformed histories fail the test with
// t.Fatalf.
func Replay[I, O any](t TB, w workflow.Workflow[I, O], history []byte) {
	t.Helper()
	if err := replay(w, history); err != nil {
		var he *historyError
		if errors.As(err, &he) {
			t.Fatalf("%v", err)
			return
		}
		t.Errorf("%v", err)
	}
}

// historyError is a history that cannot be replayed at all.
type historyError struct{ msg string }

func (e *historyError) Error() string { return "workflowtest: replay: " + e.msg }

func historyErrorf(format string, args ...any) error {
	return &historyError{msg: fmt.Sprintf(format, args...)}
}

// parseHistory accepts a page ({"items": [...], "cursor": ""}) or an array.
func parseHistory(b []byte) ([]worlds.Event, error) {
	b = bytes.TrimSpace(b)
	var events []worlds.Event
	switch {
	case len(b) > 0 && b[0] == '[':
		if err := json.Unmarshal(b, &events); err != nil {
			return nil, historyErrorf("history is not a JSON array of events: %v", err)
		}
	default:
		var page worlds.Page[worlds.Event]
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, historyErrorf("history is neither an events page nor an array of events: %v", err)
		}
		if page.Cursor != "" {
			return nil, historyErrorf("history is one page of a longer log (cursor %q): print it with --all", page.Cursor)
		}
		events = page.Items
	}
	if len(events) == 0 {
		return nil, historyErrorf("history has no events")
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	if events[0].Type != worlds.EventRunCreated {
		return nil, historyErrorf("history starts with %s, not %s: it is not a whole log", events[0].Type, worlds.EventRunCreated)
	}
	for i := range events {
		if events[i].Seq != 0 && events[i].Seq != int64(i+1) {
			return nil, historyErrorf("history skips from event %d to %d: it is not a whole log", i, events[i].Seq)
		}
		if events[i].RunID != events[0].RunID {
			return nil, historyErrorf("history mixes runs %q and %q", events[0].RunID, events[i].RunID)
		}
	}
	if events[0].RunID == "" {
		return nil, historyErrorf("history's events carry no run ID")
	}
	return events, nil
}

// replayObserver keeps how the replayed run ended.
type replayObserver struct {
	workflow.NopObserver
	mu     sync.Mutex
	ended  bool
	status worlds.RunStatus
	err    error
}

func (o *replayObserver) RunFinished(ctx context.Context, _ workflow.Info, status worlds.RunStatus, err error) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended, o.status, o.err = true, status, err
	return ctx
}

func replay[I, O any](w workflow.Workflow[I, O], history []byte) error {
	events, err := parseHistory(history)
	if err != nil {
		return err
	}
	// Code errors fail the replayed run, so they are reported, not retried.
	runner := workflow.Use(w, workflow.OnCodeError(workflow.FailOnCodeError))
	name := runner.Workflows()[0]
	if events[0].WorkflowName != name {
		return historyErrorf("history is a run of workflow %q, not %q", events[0].WorkflowName, name)
	}
	runID := events[0].RunID

	// Load the history into a World of its own, each event at its recorded time so
	// the code reads the same workflow.Now. The run's end is left out so the
	// runtime replays the code; a run that never got that far is replayed as is.
	var mu sync.Mutex
	now := events[0].CreatedAt
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	world := memworld.New(memworld.Clock(clock))
	ctx := context.Background()
	var end *worlds.Event
	loaded := 0
	for i := range events {
		ev := events[i]
		if ev.Type == worlds.EventRunCompleted || ev.Type == worlds.EventRunFailed || ev.Type == worlds.EventRunCancelled {
			end = &events[i]
			break
		}
		mu.Lock()
		now = ev.CreatedAt
		mu.Unlock()
		ev.Seq, ev.CreatedAt = 0, time.Time{}
		if _, err := world.Append(ctx, runID, ev); err != nil {
			return historyErrorf("event %d (%s %s) does not apply to the events before it: %v", i+1, ev.Type, ev.CorrelationID, err)
		}
		loaded++
	}

	// The runtime's clock stays at the run's creation, so no recorded sleep is due
	// unless the history says it elapsed, and steps are queued (and never run)
	// instead of running inline.
	obs := &replayObserver{}
	created := events[0].CreatedAt
	client, err := workflow.NewClient(workflow.Config{World: world, Clock: func() time.Time { return created },
		QueueSteps: true, Observer: obs, Cache: workflow.CacheConfig{Disabled: true}})
	if err != nil {
		return err
	}
	d := worlds.Delivery{ID: "replay", Attempt: 1, DueAt: created,
		Input: worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: name, RunID: runID}}
	if err := client.Runner(runner).Run(ctx, world, d); err != nil {
		return fmt.Errorf("workflowtest: replay of run %s: %w", runID, err)
	}

	var nd *workflow.NondeterminismError
	if errors.As(obs.err, &nd) || errors.Is(obs.err, workflow.ErrUnsupportedVersion) {
		// A run on a branch the code no longer supports fails when it is next
		// delivered, whether or not it had ended.
		return fmt.Errorf("workflowtest: replay: %w", obs.err)
	}
	after, err := worlds.AllEvents(ctx, world, runID)
	if err != nil {
		return err
	}
	var pe *workflow.PanicError
	if errors.As(obs.err, &pe) && (end == nil || end.Error == nil || end.Error.Type != "panic") {
		return fmt.Errorf("workflowtest: replay of run %s: workflow code panicked: %w", runID, pe)
	}
	if end == nil {
		return nil // the history ends mid-run: whatever the code does next is new
	}
	recorded := endStatus(end.Type)
	if recorded == worlds.RunCancelled {
		return nil // the cancellation came from outside the code, wherever it was
	}
	if !obs.ended {
		// The recorded run ended here, but the code goes on or waits.
		if ops := OpsOf(after[loaded:]); len(ops) > 0 {
			return fmt.Errorf("workflowtest: replay: %w", &workflow.NondeterminismError{RunID: runID,
				Position: ops[0].Position, Expected: "the run's end (" + string(recorded) + ")", Actual: ops[0].describe()})
		}
		return fmt.Errorf("workflowtest: replay of run %s: history has the run's end (%s), code waits for an operation the history left unresolved instead",
			runID, recorded)
	}
	if obs.status != recorded {
		return fmt.Errorf("workflowtest: replay of run %s: history ends %s, code ended %s: %v", runID, recorded, obs.status, obs.err)
	}
	return nil
}

func endStatus(t worlds.EventType) worlds.RunStatus {
	switch t {
	case worlds.EventRunCompleted:
		return worlds.RunCompleted
	case worlds.EventRunFailed:
		return worlds.RunFailed
	}
	return worlds.RunCancelled
}
