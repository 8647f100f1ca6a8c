package workflow_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

// Shipping is a workflow changed while runs were in flight: version 1 added a fraud
// check before the label step. Runs that were already past that point when the
// change was deployed keep the old path (DefaultVersion); runs that reach it
// under the new code take the check.
type Shipping struct{}

func (Shipping) Run(ctx workflow.Context, order string) (string, error) {
	v, err := workflow.Version(ctx, "fraud-check", workflow.DefaultVersion, 1)
	if err != nil {
		return "", err
	}
	steps := []string{}
	if v >= 1 {
		ok, err := workflow.Step(ctx, "fraud check", func(context.Context, string) (string, error) { return "checked", nil }, order)
		if err != nil {
			return "", err
		}
		steps = append(steps, ok)
	}
	label, err := workflow.Step(ctx, "print label", func(_ context.Context, o string) (string, error) { return "label for " + o, nil }, order)
	if err != nil {
		return "", err
	}
	return strings.Join(append(steps, label), ", "), nil
}

func ExampleVersion() {
	world, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = client.Serve(ctx, workflow.Use(Shipping{})) }()

	run, err := workflow.Start(ctx, client, Shipping{}, "order-7")
	if err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	r, _ := client.GetRun(ctx, run.ID())
	fmt.Println(r.Attributes[workflow.AttrVersionPrefix+"fraud-check"])
	// Output:
	// checked, label for order-7 <nil>
	// 1
}
