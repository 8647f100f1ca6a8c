package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// greeter is a hand-written runner: the workflow runtime (workflow.Use) provides
// real ones.
type greeter struct{ done chan struct{} }

func (greeter) Workflows() []string { return []string{"greet"} }

func (g greeter) Run(ctx context.Context, w worlds.World, d worlds.Delivery) error {
	run, err := w.GetRun(ctx, d.Input.RunID)
	if err != nil {
		return err
	}
	out, _ := json.Marshal("hello, " + string(run.Input))
	_, err = w.Append(ctx, run.RunID, worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventRunCompleted, Output: out})
	close(g.done)
	return err
}

func Example() {
	ctx := context.Background()
	// A file path keeps state across restarts; local.Memory is for tests.
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	if _, err := w.Append(ctx, "run-1", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "greet", Input: json.RawMessage(`"world"`)}); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "greet", RunID: "run-1"}, worlds.QueueOptions{}); err != nil {
		log.Fatal(err)
	}

	g := greeter{done: make(chan struct{})}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error)
	go func() { served <- w.Serve(serveCtx, worlds.Runners(g)) }()
	<-g.done
	stop()
	<-served

	run, _ := w.GetRun(ctx, "run-1")
	fmt.Println(run.Status, string(run.Output))
	// Output: completed "hello, \"world\""
}

// A run started while the World serves its workflow starts eagerly: its first
// delivery runs at once, and StartRun returns once the run's creation is
// written together with that delivery's first append, here the whole run.
func ExampleWorld_StartEager() {
	ctx := context.Background()
	w, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	g := greeter{done: make(chan struct{})}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error)
	go func() { served <- w.Serve(serveCtx, worlds.Runners(g)) }()
	for w.Serving() == 0 { // Serve has not started yet
		time.Sleep(time.Millisecond)
	}

	run, err := worlds.StartRun(ctx, w, "run-2", "greet", json.RawMessage(`"eager"`), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, string(run.Output), run.EventCount)
	<-g.done
	stop()
	<-served
	// Output: completed "hello, \"eager\"" 3
}
