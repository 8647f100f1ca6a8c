package workflowmsg_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowmsg"
	"github.com/cairn-go/cairn/worlds/local"
)

// Greeting greets the name in its input.
type Greeting struct{}

func (Greeting) Run(ctx workflow.Context, in struct{ Name string }) (string, error) {
	return "hello " + in.Name, nil
}

// A start handler keyed by a body field: a message delivered twice starts the
// one run its field names. Register the handler on a router (a long-running
// consumer) or with messaging/lambda (an SQS-triggered function).
func ExampleStartHandler() {
	ctx := context.Background()
	world, _ := local.Open(ctx, local.Config{Path: local.Memory})
	defer world.Close()
	client, _ := workflow.NewClient(workflow.Config{World: world, PollInterval: 10 * time.Millisecond})
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Serve(sctx, workflow.Use(Greeting{})) }()
	defer func() { stop(); <-done }()

	key, _ := workflowmsg.KeyBodyField("Name")
	start, _ := workflowmsg.StartHandler(client, Greeting{}, workflowmsg.StartConfig[struct{ Name string }]{Key: key, Prefix: "greet-"})
	m := messagingtest.NewMessage(`{"Name":"ada"}`, nil)
	fmt.Println(start(ctx, m), start(ctx, m)) // the second delivery finds the run

	out, _ := workflow.Attach[string](client, "greet-ada").Result(ctx)
	fmt.Println(out)
	// Output:
	// <nil> <nil>
	// hello ada
}
