package workflow

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// opKind is the kind of a replayable operation; it prefixes correlation IDs.
type opKind string

const (
	opStep opKind = "step"
	opWait opKind = "wait"
	opHook opKind = "hook"
)

// correlationID names the operation at a 1-based position in call order. One
// counter spans every kind, so a step replaced by a sleep at the same position is
// detected as divergence. Hook IDs are global in a World (GetHook takes no run ID),
// so a hook's ID also carries the run ID: "hook_3.<runID>".
func correlationID(kind opKind, pos int, runID string) string {
	id := string(kind) + "_" + strconv.Itoa(pos)
	if kind == opHook {
		id += "." + runID
	}
	return id
}

func parseCorrelationID(id string) (opKind, int, bool) {
	id, _, _ = strings.Cut(id, ".")
	k, n, ok := strings.Cut(id, "_")
	if !ok {
		return "", 0, false
	}
	pos, err := strconv.Atoi(n)
	if err != nil || pos < 1 {
		return "", 0, false
	}
	switch opKind(k) {
	case opStep, opWait, opHook:
		return opKind(k), pos, true
	}
	return "", 0, false
}

// record is what the log says about one operation.
type record struct {
	kind    opKind
	id      string
	pos     int
	created worlds.Event  // step_created, wait_created, hook_created or hook_conflict
	done    *worlds.Event // step_completed, step_failed, wait_completed
	// attempts counts step_started events; started is the latest of them, and
	// retrying the latest step_retrying.
	attempts int
	started  *worlds.Event
	received []worlds.Event // hook_received, in log order
	disposed bool           // hook_disposed
}

func (r *record) describe() string {
	switch r.kind {
	case opStep:
		return fmt.Sprintf("step %q (%s)", r.created.StepName, r.id)
	case opWait:
		return "sleep (" + r.id + ")"
	}
	return "hook (" + r.id + ")"
}

// history is a run's log indexed for replay. A cached execution keeps its history
// and applies the events appended since with [history.apply], so it stays equal to
// buildHistory of the whole log.
type history struct {
	run worlds.Run
	// started is run_started; replay's clock starts at its time.
	started *worlds.Event
	byID    map[string]*record
	byPos   map[int]*record
	maxPos  int
	// newest is the Seq of the newest event that resolves an operation (or starts the
	// run): replay is live once the code has consumed it.
	newest int64
	// seq is the Seq of the last event applied.
	seq int64
	// bytes estimates the memory the indexed events hold, for the run cache.
	bytes int64
	// waiting holds the waits not completed yet, so a delivery of a long run
	// finds the due ones without scanning every operation.
	waiting map[string]*record
	// signals are the signals received, by name, in log order.
	signals map[string][]worlds.Event
	// versions are the versions of changes the run recorded ([Version]).
	versions map[string]int
	// upserts are the correlation IDs of the recorded UpsertAttributes calls,
	// and attrs the run's attributes as far as the history goes.
	upserts map[string]bool
	attrs   map[string]string
	// cancelSeq is the Seq of the run's first cancel request (0: none), and
	// cancelReason its reason: operations resolved after it are interrupted.
	cancelSeq    int64
	cancelReason string
}

// eventOverhead estimates the memory of one indexed event besides its payloads.
const eventOverhead = 320

func buildHistory(run worlds.Run, events []worlds.Event) *history {
	h := &history{run: run, byID: map[string]*record{}, byPos: map[int]*record{}, waiting: map[string]*record{}, versions: map[string]int{},
		upserts: map[string]bool{}, attrs: maps.Clone(run.Attributes)}
	h.apply(events)
	return h
}

// apply indexes events, which follow the ones already applied in log order.
func (h *history) apply(events []worlds.Event) {
	for i := range events {
		ev := new(worlds.Event)
		*ev = events[i]
		h.add(ev)
	}
}

func (h *history) add(ev *worlds.Event) {
	h.seq = max(h.seq, ev.Seq)
	h.bytes += eventOverhead + int64(len(ev.Input)+len(ev.Output)+len(ev.Payload)+len(ev.Metadata)+len(ev.CorrelationID)+len(ev.StepName)+len(ev.Token))
	if ev.Error != nil {
		h.bytes += int64(len(ev.Error.Message) + len(ev.Error.Stack))
	}
	switch ev.Type {
	case worlds.EventRunStarted:
		h.started = ev
		h.newest = max(h.newest, ev.Seq)
		return
	case worlds.EventSignalReceived:
		if h.signals == nil {
			h.signals = map[string][]worlds.Event{}
		}
		// Not newest: a signal may wait unread while the code runs on live, and
		// that code must not be taken for a replay (its logs would be lost).
		h.signals[ev.CorrelationID] = append(h.signals[ev.CorrelationID], *ev)
		return
	case worlds.EventAttributesSet:
		versionsOf(ev.Attributes, h.versions)
		if ev.CorrelationID != "" {
			h.upserts[ev.CorrelationID] = true
		}
		if h.attrs == nil {
			h.attrs = map[string]string{}
		}
		maps.Copy(h.attrs, ev.Attributes)
		if r, ok := ev.Attributes[worlds.AttrCancelRequested]; ok && h.cancelSeq == 0 {
			h.cancelSeq, h.cancelReason = ev.Seq, r
		}
		return
	case worlds.EventStepCreated, worlds.EventWaitCreated, worlds.EventHookCreated, worlds.EventHookConflict:
		kind, pos, ok := parseCorrelationID(ev.CorrelationID)
		if !ok {
			return
		}
		r := &record{kind: kind, id: ev.CorrelationID, pos: pos, created: *ev}
		h.byID[r.id] = r
		h.byPos[pos] = r
		h.maxPos = max(h.maxPos, pos)
		if ev.Type == worlds.EventHookConflict {
			h.newest = max(h.newest, ev.Seq)
		}
		if kind == opWait {
			h.waiting[r.id] = r
		}
		return
	}
	r := h.byID[ev.CorrelationID]
	if r == nil {
		return
	}
	switch ev.Type {
	case worlds.EventStepStarted:
		r.attempts++
		r.started = ev
	case worlds.EventStepCompleted, worlds.EventStepFailed, worlds.EventWaitCompleted:
		r.done = ev
		if ev.Reason != worlds.WaitCancelled {
			// A timer's cancellation resolves nothing the code waits for.
			h.newest = max(h.newest, ev.Seq)
		}
		delete(h.waiting, r.id)
	case worlds.EventHookReceived:
		r.received = append(r.received, *ev)
		h.newest = max(h.newest, ev.Seq)
	case worlds.EventHookDisposed:
		r.disposed = true
	}
}

// dueWaits returns the waits not yet completed whose resume time has come.
func (h *history) dueWaits(now time.Time) []worlds.Event {
	var due []*record
	for _, r := range h.waiting {
		if r.done == nil && r.created.ResumeAt != nil && !now.Before(*r.created.ResumeAt) {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, func(a, b *record) int { return a.pos - b.pos })
	out := make([]worlds.Event, len(due))
	for i, r := range due {
		out[i] = worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: r.id}
	}
	return out
}
