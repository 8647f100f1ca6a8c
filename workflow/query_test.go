package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// Tracked keeps its stage in a variable its query handlers read; runs counts
// how often its code is entered (deliveries and query replays).
type Tracked struct{ runs *atomic.Int32 }

func (Tracked) WorkflowName() string { return "tracked" }

func (w Tracked) Run(ctx workflow.Context, nap time.Duration) (string, error) {
	w.runs.Add(1)
	stage, n := "start", 0
	// A deferred function runs when the code ends, never before a query of
	// the suspended code answers.
	defer func() { stage = "deferred" }()
	for name, err := range map[string]error{
		"stage": workflow.SetQueryHandler(ctx, "stage", func(struct{}) (string, error) { return stage, nil }),
		"add":   workflow.SetQueryHandler(ctx, "add", func(k int) (int, error) { return n + k, nil }),
		"fail":  workflow.SetQueryHandler(ctx, "fail", func(struct{}) (int, error) { return 0, errors.New("not now") }),
		"panic": workflow.SetQueryHandler(ctx, "panic", func(struct{}) (int, error) { panic("boom") }),
	} {
		if err != nil {
			return "", errors.New(name + ": " + err.Error())
		}
	}
	out, err := workflow.Step(ctx, "a", func(context.Context, int) (int, error) { return 1, nil }, 0)
	if err != nil {
		return "", err
	}
	n, stage = out, "sleeping"
	if err := workflow.Sleep(ctx, nap); err != nil {
		return "", err
	}
	stage = "done"
	return stage, nil
}

// A query is answered by the run's code at its current position (here,
// asleep on a pending timer): from the run cache when it holds the run, else
// by a replay in the caller's process; it records nothing; unknown handlers,
// failing handlers and unknown runs are typed errors; a finished run answers
// with the state its code ended in.
func testQuery(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	wf := Tracked{runs: new(atomic.Int32)}
	h := serve(t, w, workflow.Config{}, workflow.Use(wf))
	run, err := workflow.Start(ctx, h.c, wf, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := w.GetWait(ctx, run.ID(), "wait_2"); return err == nil })
	if !cacheOff(t) {
		// The delivery caches the run's execution just after writing the wait.
		waitFor(t, func() bool { return h.c.CacheStats().Runs == 1 })
	}
	before, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	entered := wf.runs.Load()

	if stage, err := workflow.Query[string](ctx, h.c, run.ID(), "stage", nil); err != nil || stage != "sleeping" {
		t.Fatalf(`Query "stage" during the timer = %q, %v; want sleeping`, stage, err)
	}
	if sum, err := workflow.Query[int](ctx, h.c, run.ID(), "add", 41); err != nil || sum != 42 {
		t.Fatalf(`Query "add" 41 = %d, %v; want 42`, sum, err)
	}
	replays := wf.runs.Load() - entered
	if cacheOff(t) && replays != 2 || !cacheOff(t) && replays != 0 {
		t.Errorf("two queries entered the code %d times; want 0 with the run cache, 2 without", replays)
	}

	_, err = workflow.Query[int](ctx, h.c, run.ID(), "missing", nil)
	var nf *workflow.QueryNotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, workflow.ErrQueryNotFound) || !errors.Is(err, worlds.ErrNotFound) ||
		nf.Name != "missing" || !slices.Equal(nf.Known, []string{"add", "fail", "panic", "stage"}) {
		t.Fatalf("query of an unknown handler: %v (%+v)", err, nf)
	}
	for name, want := range map[string]string{"fail": "not now", "panic": "boom"} {
		_, err = workflow.Query[int](ctx, h.c, run.ID(), name, nil)
		var qe *workflow.QueryError
		if !errors.As(err, &qe) || !errors.Is(err, workflow.ErrQueryFailed) || !errors.Is(err, worlds.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Fatalf("query %q: %v; want a QueryError with %q", name, err, want)
		}
	}
	if _, err := workflow.Query[int](ctx, h.c, run.ID(), "add", "not a number"); !errors.Is(err, workflow.ErrQueryFailed) || !errors.Is(err, workflow.ErrSerialization) {
		t.Fatalf("query with an argument of the wrong type: %v", err)
	}
	if _, err := workflow.Query[string](ctx, h.c, "no-such-run", "stage", nil); !errors.Is(err, worlds.ErrRunNotFound) {
		t.Fatalf("query of an unknown run: %v", err)
	}

	// Another client that only knows the code (an API process) replays.
	api, err := workflow.NewClient(workflow.Config{World: w, Workflows: workflow.Use(wf)})
	if err != nil {
		t.Fatal(err)
	}
	if stage, err := workflow.Query[string](ctx, api, run.ID(), "stage", nil); err != nil || stage != "sleeping" {
		t.Fatalf("query through a client that runs no deliveries = %q, %v", stage, err)
	}
	bare, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	var unknown *worlds.UnknownWorkflowError
	if _, err := workflow.Query[string](ctx, bare, run.ID(), "stage", nil); !errors.As(err, &unknown) || !errors.Is(err, worlds.ErrNoRunner) || unknown.Name != "tracked" {
		t.Fatalf("query through a client without the code: %v", err)
	}

	after, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Fatalf("queries changed the log:\nbefore %s\nafter  %s", b1, b2)
	}
	if stage, err := workflow.Query[string](ctx, h.c, run.ID(), "stage", nil); err != nil || stage != "sleeping" {
		t.Fatalf("query after the others = %q, %v: the cached run must still answer", stage, err)
	}

	done, err := workflow.Start(ctx, h.c, wf, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := done.Result(resultCtx(t)); err != nil || out != "done" {
		t.Fatalf("result %q, %v", out, err)
	}
	if stage, err := workflow.Query[string](ctx, h.c, done.ID(), "stage", nil); err != nil || stage != "deferred" {
		t.Fatalf("query of a finished run = %q, %v; want the state its code ended in", stage, err)
	}
	if err := run.Cancel(ctx, "test over"); err != nil {
		t.Fatal(err)
	}
}
