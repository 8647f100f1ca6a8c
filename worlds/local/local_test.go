package local_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, cfg local.Config) *local.World {
	t.Helper()
	w, err := local.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestSmoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := open(t, local.Config{Path: filepath.Join(t.TempDir(), "w.db"), PollInterval: 20 * time.Millisecond})
	evs, err := w.Append(ctx, "r1", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}, worlds.Event{Type: worlds.EventRunStarted})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Seq != 2 {
		t.Fatalf("events %+v", evs)
	}
	if _, err := w.Append(ctx, "r1", worlds.Event{Type: worlds.EventRunStarted}); !errors.Is(err, worlds.ErrRunStarted) || !errors.Is(err, worlds.ErrConflict) {
		t.Fatalf("second start: %v", err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	runner := runnerFunc(func(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		got[d.ID]++
		if got[d.ID] == 1 && d.ID == "b" {
			return errors.New("fail once")
		}
		if d.ID == "b" {
			close(done)
		}
		return nil
	})
	for _, id := range []string{"a", "b", "a"} {
		if _, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r1"}, worlds.QueueOptions{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Serve(sctx, runner) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("b never succeeded")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("deliveries %v", got)
	}
}

type runnerFunc func(ctx context.Context, w worlds.World, d worlds.Delivery) error

func (f runnerFunc) Workflows() []string { return []string{"wf"} }
func (f runnerFunc) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	return f(ctx, w, d)
}
