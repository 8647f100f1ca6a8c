package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// maxAdvanceRounds bounds how often one delivery re-reads the log after losing a
// race with a concurrent delivery of the same run.
const maxAdvanceRounds = 8

// advance handles a DeliverWorkflow delivery: it resumes the run's cached
// execution after applying the events appended since, or replays the workflow
// against the log, and appends what the code reached next, or the run's end.
func (e *engine) advance(ctx context.Context, d worlds.Delivery, f flow) error {
	runID := d.Input.RunID
	info := Info{RunID: runID, WorkflowName: d.Input.WorkflowName}
	var x *execution
	result := CacheOff
	if e.cache != nil {
		result = CacheMiss
		if x = e.cache.take(runID, e.world); x != nil {
			result = CacheStale
			if d.Attempt <= 1 {
				// A redelivery may follow a crash of this very delivery between its
				// writes: it replays, which re-queues pending operations.
				ok, done, err := e.refresh(ctx, d, x)
				if done {
					// The run ended or is gone (or could not be read): let go of it,
					// and let the replay below act on how it ended.
					e.cache.discard(x, EvictDropped)
					if err != nil {
						return err
					}
					x = nil
				} else if ok {
					result = CacheHit
					info.WorkflowName = x.wfName
				}
			}
			if result != CacheHit && x != nil {
				x.abort()
				x = nil
			}
		}
	}
	e.cache.lookup(ctx, e.obs, info, result)
	if x != nil {
		x.proceed(withInfo(ctx, info))
	}
	raced := false // lost an append to a concurrent delivery
	inlined := 0   // steps run inline by this delivery
	for round := 0; round < maxAdvanceRounds; round++ {
		var head []worlds.Event
		if x == nil {
			var done bool
			var err error
			ctx, x, head, done, err = e.replay(ctx, d, f, &info, round == 0 && inlined == 0, (d.Attempt > 1 || raced || blockedRetry(d)) && inlined == 0)
			if done {
				return err
			}
		}
		again, err := e.drive(ctx, d, info, x, head, &inlined)
		if !again {
			return err
		}
		raced, x = true, nil
	}
	if inlined > 0 {
		// Out of rounds after progress: let a fresh delivery go on.
		return e.queueWorkflow(ctx, d.Input.WorkflowName, runID, time.Time{}, "")
	}
	return fmt.Errorf("workflow: run %s: %w", runID, worlds.ErrAppendContention)
}

// advancing lists the events only a workflow delivery appends: finding one the
// cached execution did not append means another process advanced the run.
func advancing(t worlds.EventType) bool {
	switch t {
	case worlds.EventRunCreated, worlds.EventRunStarted, worlds.EventStepCreated, worlds.EventWaitCreated,
		worlds.EventHookCreated, worlds.EventHookConflict, worlds.EventHookDisposed,
		worlds.EventRunBlocked, worlds.EventRunUnblocked:
		return true
	}
	return false
}

// marked reports whether ev is a mark only workflow code writes: a Version
// record, an UpsertAttributes record or a timer's cancellation.
func marked(ev worlds.Event) bool {
	switch ev.Type {
	case worlds.EventAttributesSet:
		return isUpsert(ev) || versionsOf(ev.Attributes, nil)
	case worlds.EventWaitCompleted:
		return ev.Reason == worlds.WaitCancelled
	}
	return false
}

// refresh brings a cached execution up to the log: it reads the events appended
// since the execution's last one and applies them, and completes waits now due.
// ok false means the entry is stale and the run must be replayed; done means the
// delivery is over (the run ended or went away, or reading failed) with err.
func (e *engine) refresh(ctx context.Context, d worlds.Delivery, x *execution) (ok, done bool, err error) {
	runID := x.runID
	var events []worlds.Event
	filter := worlds.EventFilter{AfterSeq: x.stored, Limit: worlds.MaxPageSize}
	for {
		page, err := e.world.ListEvents(ctx, runID, filter)
		if errors.Is(err, worlds.ErrRunNotFound) {
			e.log.WarnContext(ctx, "delivery for unknown run acknowledged", "run_id", runID)
			return false, true, nil
		}
		if err != nil {
			return false, true, err
		}
		events = append(events, page.Items...)
		if page.Cursor == "" {
			break
		}
		filter.Cursor = page.Cursor
	}
	seq := x.stored
	for _, ev := range events {
		switch {
		case ev.Type == worlds.EventRunCompleted || ev.Type == worlds.EventRunFailed || ev.Type == worlds.EventRunCancelled:
			return false, true, nil
		case ev.Seq != seq+1 || advancing(ev.Type) || marked(ev):
			return false, false, nil
		}
		seq = ev.Seq
	}
	x.hist.apply(events)
	x.stored = x.hist.seq
	if due := x.hist.dueWaits(e.clock()); len(due) > 0 {
		stored, err := e.world.Append(ctx, runID, due...)
		if err != nil {
			return false, false, nil // the replay handles it
		}
		if !x.applyStored(stored) {
			return false, false, nil
		}
	}
	if err := e.rearmEarlyWake(ctx, d, x.hist); err != nil {
		return false, true, err
	}
	return true, false, nil
}
