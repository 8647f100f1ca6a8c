package worlds

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Run attributes of a reset ([ResetRun]).
const (
	// AttrResetTo, on a run that was still live when it was reset, is the ID of
	// the run that replaced it.
	AttrResetTo = "cairn.reset_to"
	// AttrResetToSeq, next to AttrResetTo, is the Seq the reset cut at, so a
	// reset that stopped half-way can be finished.
	AttrResetToSeq = "cairn.reset_to_seq"
	// AttrResetFrom, on a run made by a reset, is the ID of the run whose history
	// it copied.
	AttrResetFrom = "cairn.reset_from"
	// AttrResetSeq, on a run made by a reset, is the Seq of the last event of the
	// old run's log it copied.
	AttrResetSeq = "cairn.reset_seq"
	// AttrResetCopied, on a run made by a reset, says its copy of the old run's
	// history is complete. Until it is set, the runtime acknowledges deliveries of
	// the run without running its code, so the code never runs on half a history.
	AttrResetCopied = "cairn.reset_copied"
	// AttrRandomSeed, when set, is the run ID the runtime seeds workflow.Random
	// from instead of the run's own ID. A reset sets it to the old run's seed, so
	// the new run draws the numbers its copied history was made with.
	AttrRandomSeed = "cairn.seed"
)

// ErrResetPoint is matched by a *[ResetPointError]: the event a reset was asked
// to cut the history at cannot be one.
var ErrResetPoint = kindError("not a reset point", ErrInvalidArgument)

// ResetPointError reports a reset point that is out of range or not a point
// where the run had nothing in flight. It names the run and the value, and
// matches [ErrResetPoint] and [ErrInvalidArgument].
type ResetPointError struct {
	RunID string
	// Seq is the requested point; 0 for [ResetPoint.LastStep].
	Seq int64
	// LastStep reports that the point was asked for as the last completed step.
	LastStep bool
	Reason   string
}

func (e *ResetPointError) Error() string {
	at := "event " + strconv.FormatInt(e.Seq, 10)
	if e.LastStep {
		at = "last-step"
	}
	return fmt.Sprintf("worlds: run %s: reset to %s: %s", e.RunID, at, e.Reason)
}

// Is matches [ErrResetPoint] and [ErrInvalidArgument].
func (e *ResetPointError) Is(target error) bool {
	return target == ErrResetPoint || target == ErrInvalidArgument
}

// ResetPoint says where a reset cuts an old run's history: the new run keeps
// the events up to and including Seq, or, with LastStep, up to the newest
// step_completed at which no operation was in flight.
type ResetPoint struct {
	Seq      int64
	LastStep bool
}

// String returns the point as ParseResetPoint reads it.
func (p ResetPoint) String() string {
	if p.LastStep {
		return "last-step"
	}
	return strconv.FormatInt(p.Seq, 10)
}

// ParseResetPoint reads a reset point as the CLI and the RPC take it: an event
// Seq (a positive integer) or "last-step".
func ParseResetPoint(s string) (ResetPoint, error) {
	if s == "last-step" {
		return ResetPoint{LastStep: true}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return ResetPoint{}, &ArgumentError{Field: "to", Value: strconv.Quote(clipValue(s)), Reason: `want an event seq (a positive integer) or "last-step"`}
	}
	return ResetPoint{Seq: n}, nil
}

// ResetRequest asks [ResetRun] for a new run from a prefix of an old run's history.
type ResetRequest struct {
	// RunID is the run to reset. Required.
	RunID string
	// NewRunID is the ID of the run to create. Required. Resetting again with
	// the same NewRunID (after a lost answer or a failure half-way) finishes and
	// returns the same run.
	NewRunID string
	// To is where the history is cut.
	To ResetPoint
	// Reason is recorded as the old run's cancel reason when it is still live;
	// empty uses "reset".
	Reason string
}

// copyChunk bounds the events of one append of a copy: every event writes at
// most three items besides the run view (an event, a hook and its token), so
// a chunk stays far below the AWS World's 100 transaction actions.
const copyChunk = 20

// ResetRun starts a new run from a prefix of an old run's history, the way every
// entry point resets (workflow.Client.Reset, the RPC's runs.reset, cairn runs
// reset), and returns the new run.
//
// The new run, NewRunID, is created with the old run's workflow, input and
// attributes and a copy of its events up to the reset point, and then queued.
// Its code replays the copied steps, timers and hook payloads from the log, so
// the steps completed in the prefix are not run again, and goes on live from
// there. It records [AttrResetFrom] and [AttrResetSeq], and keeps the old run's
// [AttrRandomSeed]. Version records are kept; a cancel request, a parent link
// and continue-as-new chain attributes are not. Hook IDs embed the run ID, so
// the copies carry the new run's ID; their tokens move to the new run.
//
// A reset point must lie where no operation was in flight: every step created in
// the prefix completed or failed in it, and every timer fired or was cancelled in
// it; and before the run's end. Otherwise, and for a Seq beyond the log, the
// error is a *[ResetPointError].
//
// An old run still pending or running ends first: it gets [AttrResetTo] naming
// the new run and run_cancelled, which releases its hook tokens for the copy,
// and a workflow delivery so its children are cancelled and its parent told. A
// finished old run is left as it is; resetting it again makes another run.
func ResetRun(ctx context.Context, w World, req ResetRequest) (Run, error) {
	if err := ValidateRunID(req.RunID); err != nil {
		return Run{}, err
	}
	if err := ValidateRunID(req.NewRunID); err != nil {
		return Run{}, &ArgumentError{Field: "newRunId", Value: strconv.Quote(clipValue(req.NewRunID)), Reason: err.Error()}
	}
	if req.NewRunID == req.RunID {
		return Run{}, &ArgumentError{Field: "newRunId", Value: strconv.Quote(req.NewRunID), Reason: "must differ from the run being reset"}
	}
	if !req.To.LastStep && req.To.Seq < 1 {
		return Run{}, &ResetPointError{RunID: req.RunID, Seq: req.To.Seq, Reason: "out of range: event seqs start at 1"}
	}
	if req.Reason == "" {
		req.Reason = "reset"
	}
	if err := ValidateReason(req.Reason); err != nil {
		return Run{}, err
	}
	old, err := w.GetRun(ctx, req.RunID)
	if err != nil {
		return Run{}, err
	}
	events, err := AllEvents(ctx, w, req.RunID)
	if err != nil {
		return Run{}, err
	}
	seq, err := ResetSeq(req.RunID, events, req.To)
	if err != nil {
		return Run{}, err
	}
	if prev := old.Attributes[AttrResetTo]; prev != "" && prev != req.NewRunID {
		// An earlier reset ended this run and may have stopped before its new run
		// was complete: finish that one rather than leave it missing or pending
		// for ever.
		cur, err := w.GetRun(ctx, prev)
		unfinished := errors.Is(err, ErrRunNotFound) || (err == nil && ResetIncomplete(cur) && cur.Attributes[AttrResetFrom] == req.RunID)
		if n, perr := strconv.ParseInt(old.Attributes[AttrResetToSeq], 10, 64); unfinished && perr == nil && n >= 1 && n <= int64(len(events)) {
			req.NewRunID, seq = prev, n
		}
	}
	if !old.Status.Terminal() {
		if old, err = endForReset(ctx, w, old, req, seq); err != nil {
			return Run{}, err
		}
	}
	return copyPrefix(ctx, w, old, events[:seq], req.NewRunID)
}

// endForReset ends a live run with a link to the run that replaces it, and wakes
// it so the runtime does what follows a cancel (children, parent). It returns the
// run as it is afterwards; a run another reset ended first is returned as is.
func endForReset(ctx context.Context, w World, old Run, req ResetRequest, seq int64) (Run, error) {
	link := map[string]string{AttrResetTo: req.NewRunID, AttrResetToSeq: strconv.FormatInt(seq, 10), attrCancelReason: req.Reason}
	evs := []Event{
		{Type: EventAttributesSet, Attributes: link},
		{Type: EventRunCancelled, Reason: req.Reason + ": continued in run " + req.NewRunID},
	}
	if _, err := w.Append(ctx, old.RunID, evs...); err != nil && !errors.Is(err, ErrRunFinished) {
		return Run{}, fmt.Errorf("worlds: run %s: ending it for its reset: %w", old.RunID, err)
	}
	cur, err := w.GetRun(ctx, old.RunID)
	if err != nil {
		return Run{}, err
	}
	if cur.Attributes[AttrResetTo] == req.NewRunID {
		if _, err := w.Queue(ctx, QueueInput{Kind: DeliverWorkflow, WorkflowName: cur.WorkflowName, RunID: cur.RunID}, QueueOptions{}); err != nil {
			return Run{}, fmt.Errorf("worlds: run %s ended for its reset but its worker not woken (reset again with the same new run ID to retry): %w", cur.RunID, err)
		}
	}
	return cur, nil
}

// ResetSeq returns the Seq a reset of the run with this log cuts at, checking that
// it is a reset point, or a *[ResetPointError] naming the value.
func ResetSeq(runID string, events []Event, to ResetPoint) (int64, error) {
	if to.LastStep {
		for i := len(events) - 1; i >= 0; i-- {
			if events[i].Type == EventStepCompleted && inFlight(events[:i+1]) == "" {
				return events[i].Seq, nil
			}
		}
		return 0, &ResetPointError{RunID: runID, LastStep: true, Reason: "no step completed at a point where nothing was in flight (reset to event 1 to run it from the start)"}
	}
	n := int64(len(events))
	if to.Seq < 1 || to.Seq > n {
		return 0, &ResetPointError{RunID: runID, Seq: to.Seq, Reason: fmt.Sprintf("out of range: the run has events 1 to %d", n)}
	}
	prefix := events[:to.Seq]
	switch last := prefix[len(prefix)-1]; last.Type {
	case EventRunCompleted, EventRunFailed, EventRunCancelled:
		return 0, &ResetPointError{RunID: runID, Seq: to.Seq, Reason: "not a workflow-task boundary: the event is the run's end (" + string(last.Type) + ")"}
	}
	if what := inFlight(prefix); what != "" {
		return 0, &ResetPointError{RunID: runID, Seq: to.Seq, Reason: "not a workflow-task boundary: " + what + " is in flight there"}
	}
	return to.Seq, nil
}

// inFlight names an operation of prefix that started and did not end in it, or
// returns "".
func inFlight(prefix []Event) string {
	open := map[string]string{}
	var order []string
	for _, ev := range prefix {
		switch ev.Type {
		case EventStepCreated:
			open[ev.CorrelationID] = fmt.Sprintf("step %q (%s, created at event %d)", ev.StepName, ev.CorrelationID, ev.Seq)
			order = append(order, ev.CorrelationID)
		case EventWaitCreated:
			open[ev.CorrelationID] = fmt.Sprintf("timer %s (created at event %d)", ev.CorrelationID, ev.Seq)
			order = append(order, ev.CorrelationID)
		case EventStepCompleted, EventStepFailed, EventWaitCompleted:
			delete(open, ev.CorrelationID)
		}
	}
	for _, id := range order {
		if what, ok := open[id]; ok {
			return what
		}
	}
	return ""
}

// resetDropped reports whether a reset leaves attribute k of the old run out of
// the new run: cancel requests, parent links, chain links and the old run's own
// reset records describe the old run, not the new one.
func resetDropped(k string) bool {
	switch k {
	case AttrCancelRequested, attrCancelReason, AttrResetTo, AttrResetToSeq, AttrResetFrom, AttrResetSeq, AttrResetCopied,
		"cairn.continued_as", "cairn.continued_from", "cairn.chain", "cairn.generation":
		return true
	}
	return strings.HasPrefix(k, "cairn.parent")
}

// copyEvents returns what a copy of prefix appends to run newID after its
// run_created: the events as a caller submits them, hook IDs moved to newID.
func copyEvents(oldID, newID string, prefix []Event) []Event {
	var out []Event
	for _, ev := range prefix[1:] {
		c := Event{
			Type: ev.Type, CorrelationID: ev.CorrelationID, StepName: ev.StepName, Input: ev.Input, Output: ev.Output,
			Error: ev.Error, Attempt: ev.Attempt, RetryAt: ev.RetryAt, ResumeAt: ev.ResumeAt, Token: ev.Token,
			Metadata: ev.Metadata, Payload: ev.Payload, Reason: ev.Reason,
		}
		if base, ok := strings.CutSuffix(c.CorrelationID, "."+oldID); ok {
			c.CorrelationID = base + "." + newID
		}
		if ev.Type == EventAttributesSet {
			c.Attributes = map[string]string{}
			for k, v := range ev.Attributes {
				if !resetDropped(k) {
					c.Attributes[k] = v
				}
			}
			if len(c.Attributes) == 0 {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// sameCopy reports whether stored is the copy c, so a resumed copy skips it.
func sameCopy(stored, c Event) bool {
	t := stored.Type
	if t == EventHookConflict && c.Type == EventHookCreated {
		t = EventHookCreated
	}
	return t == c.Type && stored.CorrelationID == c.CorrelationID && stored.Attempt == c.Attempt
}

// copyPrefix creates run newID from old's prefix, or finishes a copy an earlier
// reset began, and queues the new run's first delivery.
func copyPrefix(ctx context.Context, w World, old Run, prefix []Event, newID string) (Run, error) {
	first := prefix[0]
	seed := old.Attributes[AttrRandomSeed]
	if seed == "" {
		seed = old.RunID
	}
	seqStr := strconv.FormatInt(prefix[len(prefix)-1].Seq, 10)
	attrs := map[string]string{}
	for k, v := range first.Attributes {
		if !resetDropped(k) {
			attrs[k] = v
		}
	}
	attrs[AttrResetFrom], attrs[AttrResetSeq], attrs[AttrRandomSeed] = old.RunID, seqStr, seed
	_, err := w.Append(ctx, newID, Event{Type: EventRunCreated, WorkflowName: old.WorkflowName, Input: first.Input, Attributes: attrs})
	if errors.Is(err, ErrRunExists) {
		cur, gerr := w.GetRun(ctx, newID)
		if gerr != nil {
			return Run{}, gerr
		}
		if cur.Attributes[AttrResetFrom] != old.RunID || cur.Attributes[AttrResetSeq] != seqStr {
			return Run{}, fmt.Errorf("worlds: reset of run %s to event %s: new run ID %s is taken by another run: %w", old.RunID, seqStr, newID, err)
		}
	} else if err != nil {
		return Run{}, fmt.Errorf("worlds: reset of run %s: creating run %s: %w", old.RunID, newID, err)
	}
	cur, err := w.GetRun(ctx, newID)
	if err != nil {
		return Run{}, err
	}
	if cur.Attributes[AttrResetCopied] == "" {
		if err := appendCopy(ctx, w, old.RunID, newID, prefix); err != nil {
			return Run{}, err
		}
	}
	in := QueueInput{Kind: DeliverWorkflow, WorkflowName: old.WorkflowName, RunID: newID}
	if _, err := w.Queue(ctx, in, QueueOptions{ID: StartDeliveryID(newID)}); err != nil {
		return Run{}, fmt.Errorf("worlds: run %s made by a reset of run %s but not queued (reset again with the same new run ID to retry): %w", newID, old.RunID, err)
	}
	return w.GetRun(ctx, newID)
}

// appendCopy appends the events of prefix the new run lacks, in chunks, and
// marks the copy complete with its last chunk.
func appendCopy(ctx context.Context, w World, oldID, newID string, prefix []Event) error {
	copies := copyEvents(oldID, newID, prefix)
	stored, err := AllEvents(ctx, w, newID)
	if err != nil {
		return err
	}
	done := 0
	for _, ev := range stored[1:] {
		if done < len(copies) && sameCopy(ev, copies[done]) {
			done++
		}
	}
	rest := append(copies[done:], Event{Type: EventAttributesSet, Attributes: map[string]string{AttrResetCopied: "true"}})
	for len(rest) > 0 {
		n := min(copyChunk, len(rest))
		if _, err := w.Append(ctx, newID, rest[:n]...); err != nil {
			return fmt.Errorf("worlds: reset of run %s: copying its history into run %s (reset again with the same new run ID to finish): %w", oldID, newID, err)
		}
		rest = rest[n:]
	}
	return nil
}

// ResetIncomplete reports whether run was made by a reset whose copy of the old
// run's history is not complete yet: its code must not run.
func ResetIncomplete(run Run) bool {
	return run.Attributes[AttrResetFrom] != "" && run.Attributes[AttrResetCopied] == ""
}
