package workflow_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// subscribing records which runs waiters subscribe to.
type subscribing struct {
	*local.World
	mu  sync.Mutex
	ids []string
}

func (s *subscribing) SubscribeRun(runID string) (<-chan struct{}, func()) {
	s.mu.Lock()
	s.ids = append(s.ids, runID)
	s.mu.Unlock()
	return s.World.SubscribeRun(runID)
}

// TestWaitSubscribesToEveryRunOfTheChain: Result listens for the end of each
// run it waits on, a continued run's successors included, once each.
func TestWaitSubscribesToEveryRunOfTheChain(t *testing.T) {
	t.Parallel()
	lw, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lw.Close() })
	w := &subscribing{World: lw}
	var _ worlds.RunNotifier = w
	h := serve(t, w, workflow.Config{}, workflow.Use(Looper{}))
	run, err := workflow.Start(context.Background(), h.c, Looper{}, loopIn{Until: 7, Every: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := run.Result(resultCtx(t)); err != nil || got != 70 {
		t.Fatalf("Result = %d, %v; want 70", got, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	want := []string{run.ID(), run.ID() + "-cont-1", run.ID() + "-cont-2"}
	if fmt.Sprint(w.ids) != fmt.Sprint(want) {
		t.Errorf("subscribed to %v, want %v", w.ids, want)
	}
}
