package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// Doubler is a child workflow: it doubles its input in a step, fails on a
// negative one, and sleeps on zero.
type Doubler struct{}

func (Doubler) Run(ctx workflow.Context, n int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("negative input %d", n)
	case n == 0:
		return 0, workflow.Sleep(ctx, time.Hour)
	}
	return workflow.Step(ctx, "double", func(_ context.Context, n int) (int, error) { return 2 * n, nil }, n)
}

// Family starts one Doubler child per input and sums their results; a failed
// or cancelled child's error text is returned as the output, so the test sees
// the typed error the parent got.
type Family struct{}

type familyIn struct {
	Ns       []int
	Detached bool
}

type familyOut struct {
	Sum      int
	Errors   []string
	Children []string
}

func (Family) Run(ctx workflow.Context, in familyIn) (familyOut, error) {
	var out familyOut
	var kids []*workflow.ChildRun[int]
	for _, n := range in.Ns {
		c := workflow.StartChild(ctx, Doubler{}, n, workflow.WithCancelWithParent(!in.Detached),
			workflow.WithChildAttributes(map[string]string{"n": fmt.Sprint(n)}))
		kids = append(kids, c)
		out.Children = append(out.Children, c.RunID)
	}
	for _, c := range kids {
		v, err := c.Get(ctx)
		var re *workflow.RunError
		switch {
		case errors.As(err, &re) && re.RunID == c.RunID && errors.Is(err, workflow.ErrRunCancelled):
			out.Errors = append(out.Errors, "cancelled: "+re.Info.Message)
		case errors.As(err, &re) && re.RunID == c.RunID && errors.Is(err, workflow.ErrRunFailed):
			out.Errors = append(out.Errors, "failed: "+re.Info.Message)
		case err != nil:
			return out, err
		}
		out.Sum += v
	}
	return out, nil
}

func waitStatus(t *testing.T, w worlds.World, runID string, want worlds.RunStatus) worlds.Run {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		run, err := w.GetRun(context.Background(), runID)
		if err == nil && run.Status == want {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %+v, %v; want status %s", runID, run, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testChildRuns(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Family{}), workflow.Use(Doubler{}))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, Family{}, familyIn{Ns: []int{1, -4, 3}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.Sum != 8 || len(got.Errors) != 1 || got.Errors[0] != "failed: negative input -4" {
		t.Fatalf("Result = %+v", got)
	}
	for i, id := range got.Children {
		if want := workflow.ChildRunID(run.ID(), fmt.Sprintf("step_%d", i+1)); id != want {
			t.Errorf("child %d ID = %s, want %s", i, id, want)
		}
		child, err := w.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if child.Attributes[workflow.AttrParent] != run.ID() || child.Attributes[workflow.AttrParentStep] != fmt.Sprintf("step_%d", i+1) ||
			child.Attributes[workflow.AttrParentWorkflow] != "workflow_test.Family" || child.Attributes["n"] == "" {
			t.Errorf("child %s attributes = %v", id, child.Attributes)
		}
	}
	// The parent's log records each child as one operation, resolved by the child's end.
	step, err := w.GetStep(ctx, run.ID(), "step_1")
	if err != nil || step.Status != worlds.StepCompleted || string(step.Output) != "2" || !strings.HasPrefix(step.StepName, "cairn.child:") {
		t.Fatalf("step_1 = %+v, %v", step, err)
	}
}

func testChildCancel(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	for _, detached := range []bool{false, true} {
		t.Run(fmt.Sprint("detached=", detached), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			h := serve(t, w, workflow.Config{}, workflow.Use(Family{}), workflow.Use(Doubler{}))
			ctx := context.Background()
			run, err := workflow.Start(ctx, h.c, Family{}, familyIn{Ns: []int{0}, Detached: detached})
			if err != nil {
				t.Fatal(err)
			}
			childID := workflow.ChildRunID(run.ID(), "step_1")
			waitStatus(t, w, childID, worlds.RunRunning)
			if err := run.Cancel(ctx, "parent cancelled"); err != nil {
				t.Fatal(err)
			}
			if !detached {
				child := waitStatus(t, w, childID, worlds.RunCancelled)
				if child.CancelReason != "parent cancelled" {
					t.Fatalf("child cancel reason = %q", child.CancelReason)
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
			if child, err := w.GetRun(ctx, childID); err != nil || child.Status != worlds.RunRunning {
				t.Fatalf("detached child = %+v, %v; want it still running", child, err)
			}
			if err := h.c.Cancel(ctx, childID, "test over"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A parent cancelled through the RPC's runs.cancel, which writes to the World and
// wakes the run with no Client involved, still cancels its children.
func testChildCancelThroughRPC(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Family{}), workflow.Use(Doubler{}))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, Family{}, familyIn{Ns: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	childID := workflow.ChildRunID(run.ID(), "step_1")
	waitStatus(t, w, childID, worlds.RunRunning)
	srv := httptest.NewServer(worldhttp.RPC(w, worldhttp.Options{}))
	defer srv.Close()
	body := `{"method":"runs.cancel","params":{"runId":"` + run.ID() + `","reason":"parent cancelled"}}`
	res, err := http.Post(srv.URL+"/v1/workflow/rpc", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("runs.cancel: %d", res.StatusCode)
	}
	if child := waitStatus(t, w, childID, worlds.RunCancelled); child.CancelReason != "parent cancelled" {
		t.Fatalf("child cancel reason = %q", child.CancelReason)
	}
}

func testChildCancelledAlone(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Family{}), workflow.Use(Doubler{}))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, Family{}, familyIn{Ns: []int{5, 0}})
	if err != nil {
		t.Fatal(err)
	}
	childID := workflow.ChildRunID(run.ID(), "step_2")
	waitStatus(t, w, childID, worlds.RunRunning)
	if err := h.c.Cancel(ctx, childID, "not needed"); err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got.Sum != 10 || len(got.Errors) != 1 || got.Errors[0] != "cancelled: not needed" {
		t.Fatalf("Result = %+v, %v", got, err)
	}
}

// Looper counts to its input's Until in steps, continuing as new after every
// Every iterations, so no run's history holds more than Every steps.
type Looper struct{}

type loopIn struct {
	N, Until, Every int
	Fail            bool
}

func (Looper) Run(ctx workflow.Context, in loopIn) (int, error) {
	for i := 0; i < in.Every; i++ {
		if in.N == in.Until {
			if in.Fail {
				return 0, errors.New("failed at the end")
			}
			return in.N * 10, nil
		}
		n, err := workflow.Step(ctx, "inc", func(_ context.Context, n int) (int, error) { return n + 1, nil }, in.N)
		if err != nil {
			return 0, err
		}
		in.N = n
	}
	return 0, workflow.ContinueAsNew(ctx, in)
}

func testContinueAsNew(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Looper{}))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, Looper{}, loopIn{Until: 7, Every: 3}, workflow.WithAttributes(map[string]string{"tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got != 70 {
		t.Fatalf("Result = %d, %v; want 70", got, err)
	}
	// 0 -> 3, 3 -> 6, 6 -> 7: three runs, linked both ways.
	ids := []string{run.ID(), run.ID() + "-cont-1", run.ID() + "-cont-2"}
	for i, id := range ids {
		r, err := w.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != worlds.RunCompleted || r.Attributes["tenant"] != "acme" {
			t.Errorf("run %d: %+v", i, r)
		}
		if i > 0 && (r.Attributes[workflow.AttrContinuedFrom] != ids[i-1] || r.Attributes[workflow.AttrChain] != ids[0] ||
			r.Attributes[workflow.AttrGeneration] != fmt.Sprint(i)) {
			t.Errorf("run %d attributes = %v", i, r.Attributes)
		}
		if i < 2 && r.Attributes[workflow.AttrContinuedAs] != ids[i+1] {
			t.Errorf("run %d continued as %q, want %s", i, r.Attributes[workflow.AttrContinuedAs], ids[i+1])
		}
		if i == 2 && r.Attributes[workflow.AttrContinuedAs] != "" {
			t.Errorf("last run continued as %q", r.Attributes[workflow.AttrContinuedAs])
		}
		// Each run's history starts empty: at most 3 steps of 3 events each.
		steps, err := w.ListSteps(ctx, id, worlds.ListFilter{})
		if err != nil || len(steps.Items) > 3 {
			t.Errorf("run %d steps = %d, %v", i, len(steps.Items), err)
		}
	}
	if v, err := workflow.Attach[int](h.c, ids[1]).Result(resultCtx(t)); err != nil || v != 70 {
		t.Fatalf("Result from the middle of the chain = %d, %v", v, err)
	}

	failing, err := workflow.Start(ctx, h.c, Looper{}, loopIn{Until: 2, Every: 1, Fail: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = failing.Result(resultCtx(t))
	var re *workflow.RunError
	if !errors.As(err, &re) || !errors.Is(err, workflow.ErrRunFailed) || re.RunID != failing.ID()+"-cont-2" {
		t.Fatalf("failing chain: err = %v, want the last run's failure", err)
	}
}

// LoopParent waits for a Looper child that continues as new.
type LoopParent struct{}

func (LoopParent) Run(ctx workflow.Context, until int) (int, error) {
	return workflow.StartChild(ctx, Looper{}, loopIn{Until: until, Every: 2}).Get(ctx)
}

func testChildContinuesAsNew(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(LoopParent{}), workflow.Use(Looper{}))
	run, err := workflow.Start(context.Background(), h.c, LoopParent{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Result(resultCtx(t))
	if err != nil || got != 50 {
		t.Fatalf("Result = %d, %v; want 50 from the child's last run", got, err)
	}
	last, err := w.GetRun(context.Background(), workflow.ChildRunID(run.ID(), "step_1")+"-cont-2")
	if err != nil || last.Attributes[workflow.AttrParent] != run.ID() {
		t.Fatalf("child's last run = %+v, %v; want it linked to the parent", last, err)
	}
}

func TestChildRunIDLimits(t *testing.T) {
	t.Parallel()
	if got := workflow.ChildRunID("wrun_1", "step_3"); got != "wrun_1-step_3" {
		t.Fatalf("ChildRunID = %q", got)
	}
	long := strings.Repeat("a", 100)
	a, b := workflow.ChildRunID(long, "step_3"), workflow.ChildRunID(long[:99]+"b", "step_3")
	if len(a) > 100 || len(b) > 100 || a == b || !strings.HasSuffix(a, "-step_3") {
		t.Fatalf("ChildRunID of long IDs = %q (%d), %q (%d)", a, len(a), b, len(b))
	}
	for _, c := range a {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:", c) {
			t.Fatalf("ChildRunID %q holds %q", a, c)
		}
	}
}

func TestStartChildOutsideWorkflow(t *testing.T) {
	t.Parallel()
	c := workflow.StartChild(nil, Doubler{}, 1)
	if _, err := c.Get(nil); !errors.Is(err, workflow.ErrNotInWorkflow) {
		t.Fatalf("err = %v", err)
	}
	if err := workflow.ContinueAsNew(nil, 1); !errors.Is(err, workflow.ErrNotInWorkflow) {
		t.Fatalf("ContinueAsNew err = %v", err)
	}
}
