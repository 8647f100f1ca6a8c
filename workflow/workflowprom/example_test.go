package workflowprom_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowprom"
	"github.com/cairn-go/cairn/worlds/local"
)

type Hello struct{}

func (Hello) WorkflowName() string { return "hello" }

func (Hello) Run(ctx workflow.Context, name string) (string, error) {
	return workflow.Step(ctx, "greet", func(_ context.Context, n string) (string, error) { return "hello " + n, nil }, name)
}

func Example() {
	ctx := context.Background()
	reg := prometheus.NewRegistry() // serve it with promhttp.HandlerFor(reg, ...)
	metrics, _ := workflowprom.New(workflowprom.Options{Registerer: reg})
	world, _ := local.Open(ctx, local.Config{Path: local.Memory})
	defer world.Close()
	client, _ := workflow.NewClient(workflow.Config{World: world, Observer: metrics})
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Serve(sctx, metrics.Runner(workflow.Use(Hello{}))) }()

	run, _ := workflow.Start(ctx, client, Hello{}, "ada")
	_, _ = run.Result(ctx)
	stop()
	<-done
	n, _ := testutil.GatherAndCount(reg, "cairn_workflow_steps_finished_total")
	fmt.Println("step outcome series:", n)
	// Output: step outcome series: 1
}
