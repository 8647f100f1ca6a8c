package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	"github.com/cschleiden/go-workflows/backend/sqlite"
	"github.com/cschleiden/go-workflows/client"
	"github.com/cschleiden/go-workflows/worker"
	gwf "github.com/cschleiden/go-workflows/workflow"
)

// GWPollingInterval is how long go-workflows' pollers pause after finding no
// task (its default is 200ms, which would idle the benchmark).
const GWPollingInterval = time.Millisecond

func gwAddOne(_ context.Context, n int) (int, error) { return n + 1, nil }

// gwThreeSteps is the go-workflows twin of ThreeSteps: three activities in sequence.
func gwThreeSteps(ctx gwf.Context, n int) (int, error) {
	for range Steps {
		var err error
		if n, err = gwf.ExecuteActivity[int](ctx, gwf.DefaultActivityOptions, gwAddOne, n).Get(ctx); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// gwChain is the go-workflows twin of Chain: n activities in sequence.
func gwChain(ctx gwf.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = gwf.ExecuteActivity[int](ctx, gwf.DefaultActivityOptions, gwAddOne, v).Get(ctx); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// gwBench is go-workflows on its SQLite backend (a file in dir), with Workers
// parallel workflow tasks and Workers parallel activity tasks.
type gwBench struct {
	client *client.Client
	stop   func() error
}

func startGoWorkflows(dir string) (*gwBench, error) {
	b := sqlite.NewSqliteBackend(filepath.Join(dir, "gw.db"), sqlite.WithBackendOptions(
		backend.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))))
	opts := worker.DefaultOptions
	opts.MaxParallelWorkflowTasks = Workers
	opts.MaxParallelActivityTasks = Workers
	opts.WorkflowPollingInterval = GWPollingInterval
	opts.ActivityPollingInterval = GWPollingInterval
	opts.SingleWorkerMode = true
	w := worker.New(b, &opts)
	if err := w.RegisterWorkflow(gwThreeSteps); err != nil {
		return nil, err
	}
	if err := w.RegisterWorkflow(gwChain); err != nil {
		return nil, err
	}
	if err := w.RegisterActivity(gwAddOne); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	stop := func() error {
		cancel()
		if err := w.WaitForCompletion(); err != nil {
			return err
		}
		return b.Close()
	}
	return &gwBench{client: client.New(b), stop: stop}, nil
}

func (g *gwBench) run(ctx context.Context, n int) error {
	return drive(ctx, n, func(ctx context.Context, i int) error {
		inst, err := g.client.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{
			InstanceID: "run-" + strconv.Itoa(i),
		}, gwThreeSteps, i)
		if err != nil {
			return err
		}
		out, err := client.GetWorkflowResult[int](ctx, g.client, inst, time.Minute)
		if err != nil {
			return err
		}
		if out != i+Steps {
			return fmt.Errorf("go-workflows run %s: got %d, want %d", inst.InstanceID, out, i+Steps)
		}
		return nil
	})
}

// chain runs one gwChain of n activities and awaits it.
func (g *gwBench) chain(ctx context.Context, id string, n int) error {
	inst, err := g.client.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: id}, gwChain, n)
	if err != nil {
		return err
	}
	out, err := client.GetWorkflowResult[int](ctx, g.client, inst, time.Hour)
	if err != nil {
		return err
	}
	if out != n {
		return fmt.Errorf("go-workflows chain %s: got %d, want %d", id, out, n)
	}
	return nil
}
