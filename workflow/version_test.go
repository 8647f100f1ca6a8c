package workflow_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// Versioned is one workflow in three deployments: v1 runs step a, sleeps and
// runs step b; v2 inserts step check behind Version; v3 drops the v1 path. The
// code pointer switches deployments under a running worker.
type Versioned struct{ code *atomic.Int32 }

func (Versioned) WorkflowName() string { return "versioned" }

func (w Versioned) Run(ctx workflow.Context, nap time.Duration) (string, error) {
	code := w.code.Load()
	path := []string{}
	step := func(name string) error {
		out, err := workflow.Step(ctx, name, func(context.Context, string) (string, error) { return name, nil }, name)
		path = append(path, out)
		return err
	}
	if err := step("a"); err != nil {
		return "", err
	}
	if code >= 2 {
		min := workflow.DefaultVersion
		if code >= 3 {
			min = 1
		}
		v, err := workflow.Version(ctx, "insert-check", min, 1)
		if err != nil {
			return "", err
		}
		if again, _ := workflow.Version(ctx, "insert-check", min, 1); again != v {
			return "", errors.New("a second Version call changed its answer")
		}
		if v == 1 {
			if err := step("check"); err != nil {
				return "", err
			}
		}
	}
	if err := workflow.Sleep(ctx, nap); err != nil {
		return "", err
	}
	if err := step("b"); err != nil {
		return "", err
	}
	return strings.Join(path, ","), nil
}

// A run started under v1 code and asleep when v2 is deployed completes on the v1
// path; a run started under v2 takes the new step and records its version; v3,
// which no longer supports the v1 path, fails a v1 run with a VersionError.
func testVersion(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	wf := Versioned{code: new(atomic.Int32)}
	wf.code.Store(1)
	h := serve(t, w, workflow.Config{}, workflow.Use(wf))
	// deploy switches the code; a new process starts with an empty run cache.
	deploy := func(code int32) { wf.code.Store(code); h.c.FlushCache() }
	old, err := workflow.Start(ctx, h.c, wf, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stuck, err := workflow.Start(ctx, h.c, wf, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{old.ID(), stuck.ID()} {
		waitFor(t, func() bool { _, err := w.GetWait(ctx, id, "wait_2"); return err == nil })
	}
	deploy(2)
	if out, err := old.Result(resultCtx(t)); err != nil || out != "a,b" {
		t.Fatalf("v1 run under v2 code = %q, %v; want the v1 path a,b", out, err)
	}
	fresh, err := workflow.Start(ctx, h.c, wf, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := fresh.Result(resultCtx(t)); err != nil || out != "a,check,b" {
		t.Fatalf("v2 run = %q, %v; want a,check,b", out, err)
	}
	if r, err := w.GetRun(ctx, fresh.ID()); err != nil || r.Attributes[workflow.AttrVersionPrefix+"insert-check"] != "1" {
		t.Fatalf("v2 run's attributes = %v, %v; want its version recorded", r.Attributes, err)
	}
	if r, _ := w.GetRun(ctx, old.ID()); r.Attributes[workflow.AttrVersionPrefix+"insert-check"] != "" {
		t.Fatalf("v1 run recorded a version: %v", r.Attributes)
	}

	// A delivery of the sleeping run (a hook, a cancel, a redelivery) replays it.
	deploy(3)
	if _, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "versioned", RunID: stuck.ID()}, worlds.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = stuck.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !strings.Contains(re.Info.Message, `version -1 of change "insert-check", code supports 1 to 1`) {
		t.Fatalf("v1 run under v3 code: %v; want the VersionError", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// VersionArgs calls Version with its input's arguments.
type VersionArgs struct{}

type versionCall struct {
	ID       string
	Min, Max int
}

func (VersionArgs) Run(ctx workflow.Context, in versionCall) (int, error) {
	return workflow.Version(ctx, in.ID, in.Min, in.Max)
}

func TestVersionBadArguments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		in    versionCall
		field string
	}{
		{"empty change ID", versionCall{"", -1, 1}, "Version changeID"},
		{"min above max", versionCall{"x", 2, 1}, "Version minSupported"},
		{"min below DefaultVersion", versionCall{"x", -2, 1}, "Version minSupported"},
		{"change ID too long", versionCall{strings.Repeat("x", 200), -1, 1}, "Version changeID"},
		{"control character", versionCall{"a\x00b", -1, 1}, "Version changeID"},
	}
	h := serve(t, memworld.New(), workflow.Config{}, workflow.Use(VersionArgs{}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, err := workflow.Start(context.Background(), h.c, VersionArgs{}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run.Result(resultCtx(t))
			var re *workflow.RunError
			if !errors.As(err, &re) || !strings.Contains(re.Info.Message, tc.field) {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, tc.field)
			}
		})
	}
	run, err := workflow.Start(context.Background(), h.c, VersionArgs{}, versionCall{"x", -1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := run.Result(resultCtx(t)); err != nil || v != 3 {
		t.Fatalf("a new run's version = %d, %v; want maxSupported 3", v, err)
	}
}
