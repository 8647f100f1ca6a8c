package reliability_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/chaos"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// ChainHop continues as new without running a step until its input reaches
// 3, so every run of its chain starts and ends in one delivery and one append.
type ChainHop struct{}

func (ChainHop) Run(ctx workflow.Context, n int) (int, error) {
	if n < 3 {
		return 0, workflow.ContinueAsNew(ctx, n+1)
	}
	return n * 10, nil
}

// ChainParent waits for a ChainHop child, whose chain's last run tells it.
type ChainParent struct{}

func (ChainParent) Run(ctx workflow.Context, n int) (int, error) {
	v, err := workflow.StartChild(ctx, ChainHop{}, n).Get(ctx)
	return v + 1, err
}

// TestChainsUnderFaults runs parents whose children continue as new, run after
// run, on the embedded World while appends commit with their answer lost or
// fail, queue calls fail, and deliveries arrive twice, early or late. Every
// link must hold: each continuation starts, and the chain's last run tells
// the parent, so every parent completes with its child's output.
func TestChainsUnderFaults(t *testing.T) {
	t.Parallel()
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	base, faulty, client := chaosClient(ctx, t, chaos.Rates{
		AppendBefore: 0.05, AppendLost: 0.15, QueueBefore: 0.03,
		Duplicate: 0.2, Late: 0.1, LateBy: 150 * time.Millisecond, Early: 0.5,
	}, s)
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- client.Serve(serveCtx, worlds.Runners(workflow.Use(ChainParent{}), workflow.Use(ChainHop{})))
	}()
	defer func() { stop(); <-served }()

	const runs = 12
	ids := make([]string, 0, runs)
	for i := range runs {
		id := fmt.Sprintf("chain-%d-%d", s%100000, i)
		for attempt := 0; ; attempt++ {
			_, err := workflow.Start(ctx, client, ChainParent{}, i%3, workflow.WithRunID(id))
			if err == nil {
				break
			}
			if run, gerr := base.GetRun(ctx, id); gerr == nil && run.EventCount > 0 {
				// Created; make sure its first delivery exists (idempotent by ID).
				if _, qerr := base.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: worlds.WorkflowName[ChainParent](), RunID: id}, worlds.QueueOptions{ID: "start-" + id}); qerr == nil {
					break
				}
			}
			if attempt > 50 {
				t.Fatalf("seed %d: start %s: %v", s, id, err)
			}
		}
		ids = append(ids, id)
	}

	settle := time.AfterFunc(30*time.Second, faulty.Disable) // let stragglers finish fault-free
	defer settle.Stop()
	for _, id := range ids {
		run, err := client.Wait(ctx, id)
		if err != nil {
			dump(t, base, id)
			child := workflow.ChildRunID(id, "step_1")
			for g := 0; g <= 3; g++ {
				cid := child
				if g > 0 {
					cid = fmt.Sprintf("%s-cont-%d", child, g)
				}
				if r, gerr := base.GetRun(context.Background(), cid); gerr == nil {
					t.Logf("chain run %s: %s", cid, r.Status)
				}
			}
			t.Fatalf("seed %d: wait %s: %v", s, id, err)
		}
		if run.Status != worlds.RunCompleted || string(run.Output) != "31" {
			t.Fatalf("seed %d: run %s ended %s with %s (%+v), want completed with 31", s, id, run.Status, run.Output, run.Error)
		}
	}
	c := faulty.Counts()
	t.Logf("runs=%d faults=%d (append-before=%d append-lost=%d queue=%d dup=%d late=%d early=%d)",
		runs, c.Total(), c.AppendBefore, c.AppendLost, c.QueueBefore, c.Duplicate, c.Late, c.Early)
	if c.AppendLost == 0 {
		t.Fatalf("seed %d: no append lost its answer; the test proved nothing", s)
	}
}
