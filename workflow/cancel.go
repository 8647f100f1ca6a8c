package workflow

import (
	"context"
	"sync"
	"time"
)

// runningSteps are the step attempts running in this process, by run, so a
// cancel sent from this process interrupts them.
type runningSteps struct {
	mu    sync.Mutex
	byRun map[string]map[*runningStep]struct{}
}

type runningStep struct {
	started time.Time
	cancel  context.CancelCauseFunc
}

// add registers an attempt of a step of runID; the returned function
// unregisters it.
func (r *runningSteps) add(runID string, cancel context.CancelCauseFunc) func() {
	s := &runningStep{started: time.Now(), cancel: cancel}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byRun == nil {
		r.byRun = map[string]map[*runningStep]struct{}{}
	}
	if r.byRun[runID] == nil {
		r.byRun[runID] = map[*runningStep]struct{}{}
	}
	r.byRun[runID][s] = struct{}{}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.byRun[runID], s)
		if len(r.byRun[runID]) == 0 {
			delete(r.byRun, runID)
		}
	}
}

// interrupt cancels the contexts of runID's attempts that started before asked,
// the time the cancel was requested: cleanup steps the run's code starts
// after seeing the request keep running.
func (r *runningSteps) interrupt(runID string, asked time.Time, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.byRun[runID] {
		if s.started.Before(asked) {
			s.cancel(cause)
		}
	}
}
