// Package memworld is an in-memory worlds.World for the workflow runtime's tests:
// projections through worlds.Plan, a due-time queue executed by Serve, stream
// notifications, and knobs to duplicate deliveries. It is not durable and not for
// production use.
package memworld

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// World is an in-memory World. It implements worlds.World, worlds.StreamNotifier,
// worlds.Server and worlds.DeliveryCanceller.
type World struct {
	mu      sync.Mutex
	runs    map[string]*worlds.Run
	order   []string
	events  map[string][]worlds.Event
	steps   map[string]map[string]*worlds.Step
	stepOrd map[string][]string
	hooks   map[string]*worlds.Hook
	tokens  map[string]string // token -> hook ID
	waits   map[string]*worlds.Wait
	streams map[string]*stream
	subs    map[string]map[int]chan struct{}
	subSeq  int

	queue []*worlds.Delivery
	ids   map[string]bool
	// counts are the receive counts of deliveries taken and not yet
	// acknowledged, so one queued again under its ID while it runs keeps its
	// count, as every World must.
	counts  map[string]int
	seq     int
	wake    chan struct{}
	clock   func() time.Time
	dup     bool
	Appends int // number of successful Append calls
}

var (
	_ worlds.World             = (*World)(nil)
	_ worlds.StreamNotifier    = (*World)(nil)
	_ worlds.Server            = (*World)(nil)
	_ worlds.DeliveryCanceller = (*World)(nil)
)

type stream struct {
	info   worlds.StreamInfo
	chunks [][]byte
}

// Option configures a World.
type Option func(*World)

// DuplicateDeliveries makes Serve run every delivery twice, concurrently.
func DuplicateDeliveries() Option { return func(w *World) { w.dup = true } }

// Clock makes the World read the time from now instead of time.Now: event times,
// due times and which deliveries RunOne finds due follow it.
func Clock(now func() time.Time) Option { return func(w *World) { w.clock = now } }

// New returns an empty World.
func New(opts ...Option) *World {
	w := &World{
		runs: map[string]*worlds.Run{}, events: map[string][]worlds.Event{},
		steps: map[string]map[string]*worlds.Step{}, stepOrd: map[string][]string{},
		hooks: map[string]*worlds.Hook{}, tokens: map[string]string{}, waits: map[string]*worlds.Wait{},
		streams: map[string]*stream{}, subs: map[string]map[int]chan struct{}{}, ids: map[string]bool{}, counts: map[string]int{},
		wake: make(chan struct{}, 1), clock: time.Now,
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

type loader struct{ w *World }

func (l loader) Step(_ context.Context, runID, stepID string) (*worlds.Step, error) {
	if s := l.w.steps[runID][stepID]; s != nil {
		cp := *s
		return &cp, nil
	}
	return nil, nil
}
func (l loader) Hook(_ context.Context, id string) (*worlds.Hook, error) {
	if h := l.w.hooks[id]; h != nil {
		cp := *h
		return &cp, nil
	}
	return nil, nil
}
func (l loader) TokenOwner(_ context.Context, token string) (*worlds.Hook, error) {
	if id, ok := l.w.tokens[token]; ok {
		return l.Hook(nil, id)
	}
	return nil, nil
}
func (l loader) Wait(_ context.Context, runID, waitID string) (*worlds.Wait, error) {
	if x := l.w.waits[runID+"/"+waitID]; x != nil {
		cp := *x
		return &cp, nil
	}
	return nil, nil
}
func (l loader) ActiveHooks(_ context.Context, runID string) ([]worlds.Hook, error) {
	var out []worlds.Hook
	for _, h := range l.w.hooks {
		if h.RunID == runID && h.Status == worlds.HookActive {
			out = append(out, *h)
		}
	}
	return out, nil
}

// Append implements worlds.World.
func (w *World) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var run *worlds.Run
	if r := w.runs[runID]; r != nil {
		cp := *r
		run = &cp
	}
	effs, err := worlds.Plan(ctx, runID, run, events, w.clock(), loader{w})
	if err != nil {
		return nil, err
	}
	out := make([]worlds.Event, 0, len(effs))
	for _, e := range effs {
		out = append(out, e.Event)
		w.events[runID] = append(w.events[runID], e.Event)
		if e.Step != nil {
			if w.steps[runID] == nil {
				w.steps[runID] = map[string]*worlds.Step{}
			}
			if _, ok := w.steps[runID][e.Step.StepID]; !ok {
				w.stepOrd[runID] = append(w.stepOrd[runID], e.Step.StepID)
			}
			s := *e.Step
			w.steps[runID][s.StepID] = &s
		}
		for _, h := range append(slices.Clone(e.DisposedHooks), derefHook(e.Hook)...) {
			h := h
			w.hooks[h.HookID] = &h
		}
		for _, t := range e.ReleaseTokens {
			delete(w.tokens, t)
		}
		if e.ClaimToken != "" {
			w.tokens[e.ClaimToken] = e.Hook.HookID
		}
		if e.Wait != nil {
			x := *e.Wait
			w.waits[runID+"/"+x.WaitID] = &x
		}
	}
	last := effs[len(effs)-1].Run
	if w.runs[runID] == nil {
		w.order = append(w.order, runID)
	}
	w.runs[runID] = &last
	w.Appends++
	return out, nil
}

func derefHook(h *worlds.Hook) []worlds.Hook {
	if h == nil {
		return nil
	}
	return []worlds.Hook{*h}
}

// GetRun implements worlds.World.
func (w *World) GetRun(_ context.Context, runID string) (worlds.Run, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.runs[runID]; r != nil {
		return *r, nil
	}
	return worlds.Run{}, fmt.Errorf("run %s: %w", runID, worlds.ErrRunNotFound)
}

// ListRuns implements worlds.World. The cursor is the last run ID of the page,
// so runs created meanwhile do not shift the listing.
func (w *World) ListRuns(_ context.Context, f worlds.RunFilter) (worlds.Page[worlds.Run], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	if f.Status != "" && !f.Status.Valid() {
		return worlds.Page[worlds.Run]{}, &worlds.ArgumentError{Field: "RunFilter.Status", Value: f.Status, Reason: "unknown run status"}
	}
	if err := worlds.ValidateAttributeFilter(f.Attributes); err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	start := len(w.order) - 1
	if f.Cursor != "" {
		i := slices.Index(w.order, f.Cursor)
		if i < 0 {
			return worlds.Page[worlds.Run]{}, &worlds.ArgumentError{Field: "RunFilter.Cursor", Value: f.Cursor, Reason: "not a cursor of this World"}
		}
		start = i - 1
	}
	var p worlds.Page[worlds.Run]
	for i := start; i >= 0; i-- {
		r := w.runs[w.order[i]]
		if (f.WorkflowName != "" && r.WorkflowName != f.WorkflowName) || (f.Status != "" && r.Status != f.Status) ||
			(!f.CreatedAfter.IsZero() && !r.CreatedAt.After(f.CreatedAfter)) || (!f.CreatedBefore.IsZero() && !r.CreatedAt.Before(f.CreatedBefore)) ||
			!worlds.MatchAttributes(*r, f.Attributes) {
			continue
		}
		if len(p.Items) == limit {
			p.Cursor = p.Items[len(p.Items)-1].RunID
			break
		}
		p.Items = append(p.Items, *r)
	}
	return p, nil
}

// ListEvents implements worlds.World with pages of at most 7 events, to exercise
// paging.
func (w *World) ListEvents(_ context.Context, runID string, f worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs[runID] == nil {
		return worlds.Page[worlds.Event]{}, worlds.ErrRunNotFound
	}
	from := int(f.AfterSeq)
	if f.Cursor != "" {
		if from, err = offset(f.Cursor, "EventFilter.Cursor"); err != nil {
			return worlds.Page[worlds.Event]{}, err
		}
	}
	return pageOf(w.events[runID], from, min(limit, 7)), nil
}

// offset decodes a cursor that is an offset into a listing.
func offset(cursor, field string) (int, error) {
	n, err := strconv.Atoi(cursor)
	if err != nil || n < 0 {
		return 0, &worlds.ArgumentError{Field: field, Value: cursor, Reason: "not a cursor of this World"}
	}
	return n, nil
}

// pageOf returns up to limit items from offset from, with the offset of the next
// page as the cursor.
func pageOf[T any](items []T, from, limit int) worlds.Page[T] {
	from = min(from, len(items))
	end := min(len(items), from+limit)
	p := worlds.Page[T]{Items: slices.Clone(items[from:end])}
	if end < len(items) {
		p.Cursor = strconv.Itoa(end)
	}
	return p
}

// GetStep implements worlds.World.
func (w *World) GetStep(_ context.Context, runID, stepID string) (worlds.Step, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.steps[runID][stepID]; s != nil {
		return *s, nil
	}
	return worlds.Step{}, worlds.ErrStepNotFound
}

// ListSteps implements worlds.World.
func (w *World) ListSteps(_ context.Context, runID string, f worlds.ListFilter) (worlds.Page[worlds.Step], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	from := 0
	if f.Cursor != "" {
		if from, err = offset(f.Cursor, "ListFilter.Cursor"); err != nil {
			return worlds.Page[worlds.Step]{}, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var steps []worlds.Step
	for _, id := range w.stepOrd[runID] {
		steps = append(steps, *w.steps[runID][id])
	}
	return pageOf(steps, from, limit), nil
}

// GetHook implements worlds.World.
func (w *World) GetHook(_ context.Context, id string) (worlds.Hook, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h := w.hooks[id]; h != nil {
		return *h, nil
	}
	return worlds.Hook{}, worlds.ErrHookNotFound
}

// GetHookByToken implements worlds.World.
func (w *World) GetHookByToken(_ context.Context, token string) (worlds.Hook, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := w.tokens[token]; ok {
		return *w.hooks[id], nil
	}
	return worlds.Hook{}, worlds.ErrHookNotFound
}

// ListHooks implements worlds.World, newest first. The cursor is an offset, so
// hooks created meanwhile shift a listing over every run; one run's listing is
// stable once the run stops creating hooks.
func (w *World) ListHooks(_ context.Context, f worlds.HookFilter) (worlds.Page[worlds.Hook], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	from := 0
	if f.Cursor != "" {
		if from, err = offset(f.Cursor, "HookFilter.Cursor"); err != nil {
			return worlds.Page[worlds.Hook]{}, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var hooks []worlds.Hook
	for _, h := range w.hooks {
		if f.RunID == "" || h.RunID == f.RunID {
			hooks = append(hooks, *h)
		}
	}
	sort.Slice(hooks, func(i, j int) bool {
		if !hooks[i].CreatedAt.Equal(hooks[j].CreatedAt) {
			return hooks[i].CreatedAt.After(hooks[j].CreatedAt)
		}
		return hooks[i].HookID > hooks[j].HookID
	})
	return pageOf(hooks, from, limit), nil
}

// GetWait implements worlds.World.
func (w *World) GetWait(_ context.Context, runID, waitID string) (worlds.Wait, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.waits[runID+"/"+waitID]; x != nil {
		return *x, nil
	}
	return worlds.Wait{}, worlds.ErrWaitNotFound
}

func skey(runID, name string) string { return runID + "\x00" + name }

// WriteStream implements worlds.World.
func (w *World) WriteStream(_ context.Context, runID, name string, chunks ...[]byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.runs[runID]
	if r == nil {
		return 0, worlds.ErrRunNotFound
	}
	if r.Status.Terminal() {
		return 0, worlds.ErrRunFinished
	}
	s := w.stream(runID, name)
	if s.info.Closed {
		return 0, worlds.ErrStreamClosed
	}
	first := len(s.chunks)
	for _, c := range chunks {
		s.chunks = append(s.chunks, slices.Clone(c))
	}
	s.info.Chunks, s.info.UpdatedAt = len(s.chunks), w.clock()
	w.notify(runID, name)
	return first, nil
}

func (w *World) stream(runID, name string) *stream {
	s := w.streams[skey(runID, name)]
	if s == nil {
		now := w.clock()
		s = &stream{info: worlds.StreamInfo{RunID: runID, Name: name, CreatedAt: now, UpdatedAt: now}}
		w.streams[skey(runID, name)] = s
	}
	return s
}

func (w *World) notify(runID, name string) {
	for _, ch := range w.subs[skey(runID, name)] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// CloseStream implements worlds.World.
func (w *World) CloseStream(_ context.Context, runID, name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs[runID] == nil {
		return worlds.ErrRunNotFound
	}
	w.stream(runID, name).info.Closed = true
	w.notify(runID, name)
	return nil
}

// ReadStream implements worlds.World.
func (w *World) ReadStream(_ context.Context, runID, name string, from, limit int) (worlds.StreamPage, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.streams[skey(runID, name)]
	if s == nil {
		return worlds.StreamPage{}, worlds.ErrStreamNotFound
	}
	if limit <= 0 {
		limit = worlds.DefaultPageSize
	}
	p := worlds.StreamPage{Next: from}
	for i := from; i < len(s.chunks) && len(p.Chunks) < limit; i++ {
		p.Chunks = append(p.Chunks, worlds.Chunk{Index: i, Data: slices.Clone(s.chunks[i])})
		p.Next = i + 1
	}
	p.Closed = s.info.Closed && p.Next >= len(s.chunks)
	return p, nil
}

// ListStreams implements worlds.World.
func (w *World) ListStreams(_ context.Context, runID string) ([]worlds.StreamInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []worlds.StreamInfo
	for _, s := range w.streams {
		if s.info.RunID == runID {
			out = append(out, s.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SubscribeStream implements worlds.StreamNotifier.
func (w *World) SubscribeStream(runID, name string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := skey(runID, name)
	if w.subs[k] == nil {
		w.subs[k] = map[int]chan struct{}{}
	}
	w.subSeq++
	id, ch := w.subSeq, make(chan struct{}, 1)
	w.subs[k][id] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs[k], id)
	}
}

// Queue implements worlds.World. A delivery ID given in opts that is still queued
// is not queued twice.
func (w *World) Queue(_ context.Context, in worlds.QueueInput, opts worlds.QueueOptions) (string, error) {
	if err := in.Validate(); err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	id := opts.ID
	if id == "" {
		w.seq++
		id = "d" + strconv.Itoa(w.seq)
	} else if w.ids[id] {
		return id, nil
	}
	w.ids[id] = true
	due := opts.DueAt
	if due.IsZero() {
		due = w.clock()
	}
	w.queue = append(w.queue, &worlds.Delivery{ID: id, Input: in, DueAt: due, Attempt: w.counts[id]})
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return id, nil
}

// CancelDelivery implements worlds.DeliveryCanceller: it removes the queued
// delivery id. A delivery Serve or RunOne already took is running and is left
// alone (a failed one is queued again as usual); an unknown id is not an error.
func (w *World) CancelDelivery(_ context.Context, id string) error {
	if id == "" {
		return &worlds.ArgumentError{Field: "id", Value: id, Reason: "required"}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = slices.DeleteFunc(w.queue, func(d *worlds.Delivery) bool { return d.ID == id })
	delete(w.ids, id)
	return nil
}

// Capabilities implements worlds.World.
func (w *World) Capabilities() worlds.Capabilities { return worlds.Capabilities{LiveStreams: true} }

// Queued returns the deliveries waiting in the queue.
func (w *World) Queued() []worlds.Delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]worlds.Delivery, len(w.queue))
	for i, d := range w.queue {
		out[i] = *d
	}
	return out
}

// take removes and returns the due deliveries and the time the next one is due.
func (w *World) take() ([]worlds.Delivery, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock()
	var due []worlds.Delivery
	var next time.Time
	kept := w.queue[:0]
	for _, d := range w.queue {
		if !d.DueAt.After(now) {
			d.Attempt++
			due = append(due, *d)
			delete(w.ids, d.ID)
			w.counts[d.ID] = max(w.counts[d.ID], d.Attempt)
			continue
		}
		if next.IsZero() || d.DueAt.Before(next) {
			next = d.DueAt
		}
		kept = append(kept, d)
	}
	w.queue = kept
	return due, next
}

func (w *World) requeue(d worlds.Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ids[d.ID] {
		// Queued again while it ran: that one runs, counted as a retry.
		for _, q := range w.queue {
			if q.ID == d.ID {
				q.Attempt = max(q.Attempt, d.Attempt)
			}
		}
		return
	}
	d.DueAt = w.clock().Add(20 * time.Millisecond)
	w.queue = append(w.queue, &d)
	w.ids[d.ID] = true
}

// ack forgets the count of an acknowledged delivery not queued again.
func (w *World) ack(d worlds.Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ids[d.ID] {
		delete(w.counts, d.ID)
	}
}

// Serve implements worlds.Server: it runs due deliveries concurrently until ctx ends
// and waits for the ones running. A delivery whose Run fails is redelivered with
// Attempt increased.
func (w *World) Serve(ctx context.Context, r worlds.Runner) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		due, next := w.take()
		for _, d := range due {
			n := 1
			if w.dup {
				n = 2
			}
			for range n {
				wg.Add(1)
				go func(d worlds.Delivery) {
					defer wg.Done()
					if err := r.Run(ctx, w, d); err != nil && ctx.Err() == nil {
						w.requeue(d)
					} else if err == nil {
						w.ack(d)
					}
				}(d)
			}
		}
		wait := 50 * time.Millisecond
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-w.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// RunOne runs every delivery due now once with r, in queue order, on the calling
// goroutine, and returns how many ran. Tests use it to drive a run step by step.
func (w *World) RunOne(ctx context.Context, r worlds.Runner) (int, []error) {
	due, _ := w.take()
	var errs []error
	for _, d := range due {
		if err := r.Run(ctx, w, d); err != nil {
			errs = append(errs, err)
			w.requeue(d)
		} else {
			w.ack(d)
		}
	}
	return len(due), errs
}

// Redeliver queues d again as it was received, for duplicate-delivery tests.
func (w *World) Redeliver(d worlds.Delivery) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, &d)
}
