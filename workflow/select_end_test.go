package workflow_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// DeadlineThenEnd races a hook against a long timer and returns as soon as the
// payload is in, so the run's next write after the Select is its completion.
type DeadlineThenEnd struct{}

func (DeadlineThenEnd) Run(ctx workflow.Context, in deadlineIn) (string, error) {
	hook, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: in.Token})
	if err != nil {
		return "", err
	}
	timer := workflow.NewTimer(ctx, in.Timeout)
	if i, err := workflow.Select(ctx, hook, timer); err != nil || i != 0 {
		return "", errors.Join(err, errors.New("the timer won"))
	}
	return hook.Receive(ctx)
}

// cancelSpy records the deliveries the runtime withdraws, and forwards them to
// the World it wraps.
type cancelSpy struct {
	worlds.World
	mu  sync.Mutex
	ids []string
}

func (s *cancelSpy) CancelDelivery(ctx context.Context, id string) error {
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.mu.Unlock()
	return s.World.(worlds.DeliveryCanceller).CancelDelivery(ctx, id)
}

// Serve serves the wrapped World's deliveries, handing r the spy as their World.
func (s *cancelSpy) Serve(ctx context.Context, r worlds.Runner) error {
	return s.World.(worlds.Server).Serve(ctx, spyRunner{Runner: r, spy: s})
}

type spyRunner struct {
	worlds.Runner
	spy *cancelSpy
}

func (r spyRunner) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	return r.Runner.Run(ctx, r.spy, d)
}

func (s *cancelSpy) cancelled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// The losing timer of a Select is recorded as cancelled, and its wake-up
// withdrawn, when the run's next write is its completion.
func testSelectLoserAtEnd(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	if _, ok := w.(worlds.DeliveryCanceller); !ok {
		t.Fatalf("%T does not implement worlds.DeliveryCanceller", w)
	}
	spy := &cancelSpy{World: w}
	h := serve(t, spy, workflow.Config{}, workflow.Use(DeadlineThenEnd{}))
	ctx := context.Background()
	token := "end-" + t.Name()
	run, err := workflow.Start(ctx, h.c, DeadlineThenEnd{}, deadlineIn{Token: token, Timeout: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := w.GetWait(ctx, run.ID(), "wait_2"); return err == nil })
	waitForHook(t, w, token)
	if _, err := workflow.ResumeHook(ctx, h.c, token, "yes"); err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "yes" {
		t.Fatalf("Result = %q, %v", out, err)
	}
	if wait, err := w.GetWait(ctx, run.ID(), "wait_2"); err != nil || wait.Status != worlds.WaitCompleted {
		t.Errorf("the losing timer's wait = %+v, %v; want it completed", wait, err)
	}
	evs, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	var cancel, end int
	for i, ev := range evs {
		switch {
		case ev.Type == worlds.EventWaitCompleted && ev.CorrelationID == "wait_2" && ev.Reason == worlds.WaitCancelled:
			cancel = i
		case ev.Type == worlds.EventRunCompleted:
			end = i
		}
	}
	if cancel == 0 || cancel > end {
		t.Errorf("log %s: want wait_2's cancellation before run_completed", eventTypes(evs))
	}
	// The wake-up is withdrawn once the end is stored, so a moment after the run
	// reads completed.
	waitFor(t, func() bool { return slices.Contains(spy.cancelled(), "wake-"+run.ID()+"-wait_2") })
	if q, ok := w.(queueLister); ok {
		for _, d := range q.Queued() {
			if d.ID == "wake-"+run.ID()+"-wait_2" {
				t.Errorf("the cancelled timer's wake-up is still queued: %+v", d)
			}
		}
	}
}

func eventTypes(evs []worlds.Event) []worlds.EventType {
	out := make([]worlds.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
