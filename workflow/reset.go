package workflow

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/worlds"
)

// ResetPoint says where [Client.Reset] cuts the old run's history; make one
// with [ResetToEvent] or [ResetToLastStep].
type ResetPoint = worlds.ResetPoint

// ResetToEvent cuts the history after the event with this Seq (1-based, as
// ListEvents and cairn inspect number them): the new run keeps events 1 to seq.
func ResetToEvent(seq int64) ResetPoint { return worlds.ResetPoint{Seq: seq} }

// ResetToLastStep cuts the history after the newest completed step at which no
// other operation was in flight: a run failed by a bad deploy goes on from the
// last step it completed before the failure.
func ResetToLastStep() ResetPoint { return worlds.ResetPoint{LastStep: true} }

// ResetOption configures [Client.Reset].
type ResetOption func(*resetOptions)

type resetOptions struct {
	id, reason string
}

// WithResetRunID fixes the new run's ID instead of generating one, so a reset
// whose answer was lost, or that failed half-way, can be retried: resetting the
// same run again with the same ID finishes and returns that run.
func WithResetRunID(id string) ResetOption { return func(o *resetOptions) { o.id = id } }

// WithResetReason is recorded as the old run's cancel reason when it is still
// live; by default "reset".
func WithResetReason(reason string) ResetOption { return func(o *resetOptions) { o.reason = reason } }

// Reset starts a new run of the run's workflow from a prefix of its history, up
// to the reset point, and returns the new run; it is Temporal's reset, the way
// out for a run broken by a bad deploy. The new run has the old run's input and
// attributes and a copy of its events up to the point; its code (the code
// deployed now) replays them, so the steps completed there are not run again,
// and continues live from there. It records [worlds.AttrResetFrom] naming the
// old run.
//
// A point must be one where nothing was in flight: each step and timer started
// before it ended before it, and it is before the run's end. A point out of
// range or inside an operation returns a *[worlds.ResetPointError] naming the
// value (errors.Is [worlds.ErrResetPoint]).
//
// An old run still pending or running ends cancelled with
// [worlds.AttrResetTo] naming the new run: its hook tokens move to the new run,
// and its children are cancelled as after [Client.Cancel], though its code is
// not asked to clean up (it may be the code that keeps failing). A finished run
// is left as it is and can be reset any number of times. The RPC's runs.reset
// and `cairn runs reset RUN --to SEQ|last-step` do the same through
// [worlds.ResetRun].
//
// workflow.Now in the new run reads the times the copies were written at, not
// the old run's: code whose path depends on the clock may take another branch
// on replay. Hook tokens move only from a live old run; a second reset of a
// finished run finds them owned by the first one's new run.
func (c *Client) Reset(ctx context.Context, runID string, to ResetPoint, opts ...ResetOption) (worlds.Run, error) {
	var o resetOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.id == "" {
		o.id = c.eng.ids.NewID()
	}
	run, err := worlds.ResetRun(ctx, c.eng.world, worlds.ResetRequest{RunID: runID, NewRunID: o.id, To: to, Reason: o.reason})
	if c.eng.cache != nil {
		c.eng.cache.drop(runID)
	}
	if err != nil {
		return run, fmt.Errorf("workflow: reset run %s: %w", runID, err)
	}
	return run, nil
}

// randomSeed is what [Random] is seeded from: the run ID, or the seed a reset
// carried over from the run whose history the run copied.
func randomSeed(run worlds.Run) string {
	if s := run.Attributes[worlds.AttrRandomSeed]; s != "" {
		return s
	}
	return run.RunID
}

// resetOnly reports whether attribute k describes a reset of one run and is not
// carried to the run that continues it as new.
func resetOnly(k string) bool {
	switch k {
	case worlds.AttrResetTo, worlds.AttrResetToSeq, worlds.AttrResetFrom, worlds.AttrResetSeq, worlds.AttrResetCopied, worlds.AttrRandomSeed:
		return true
	}
	return false
}
