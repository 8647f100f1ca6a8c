package workflow_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

// Greet is a workflow: a type with a Run method. Its steps are plain functions.
type Greet struct{}

func (Greet) Run(ctx workflow.Context, name string) (string, error) {
	upper, err := workflow.Step(ctx, "shout", func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}, name)
	if err != nil {
		return "", err
	}
	return "HELLO, " + upper, nil
}

// exampleClient opens the embedded World in memory (use a file path to survive
// restarts, or worlds/aws) and serves the example workflows.
func exampleClient() (*workflow.Client, func()) {
	world, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = client.Serve(ctx, workflow.Use(Greet{}), workflow.Use(Nap{}), workflow.Use(Approve{}), workflow.Use(Reminder{}), workflow.Use(Booking{}), workflow.Use(Checkout{}))
	}()
	return client, func() { cancel(); <-done; _ = world.Close() }
}

func ExampleStart() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, Greet{}, "ada")
	if err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: HELLO, ADA <nil>
}

func ExampleStep() {
	client, stop := exampleClient()
	defer stop()
	run, _ := workflow.Start(context.Background(), client, Greet{}, "grace")
	out, _ := run.Result(context.Background())
	fmt.Println(out)
	// Output: HELLO, GRACE
}

// Nap sleeps on a durable timer; the delay could as well be 30 days.
type Nap struct{}

func (Nap) Run(ctx workflow.Context, d time.Duration) (bool, error) {
	start := workflow.Now(ctx)
	if err := workflow.Sleep(ctx, d); err != nil {
		return false, err
	}
	return workflow.Now(ctx).Sub(start) >= d, nil
}

func ExampleSleep() {
	client, stop := exampleClient()
	defer stop()
	run, _ := workflow.Start(context.Background(), client, Nap{}, 50*time.Millisecond)
	slept, err := run.Result(context.Background())
	fmt.Println(slept, err)
	// Output: true <nil>
}

// Approve waits for a decision sent to its hook's token.
type Approve struct{}

func (Approve) Run(ctx workflow.Context, invoice string) (string, error) {
	hook, err := workflow.CreateHook[bool](ctx, workflow.HookOptions{Token: "approve-" + invoice})
	if err != nil {
		return "", err
	}
	ok, err := hook.Receive(ctx)
	if err != nil || !ok {
		return "rejected", err
	}
	return "paid", nil
}

func ExampleCreateHook() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	run, _ := workflow.Start(ctx, client, Approve{}, "inv-7")
	// Someone outside the workflow approves, by token, once the hook exists. A
	// hook payload needs its hook: a sender that knows the run and may come
	// first sends a signal instead (see ExampleSignal), which needs no loop.
	for {
		if _, err := workflow.ResumeHook(ctx, client, "approve-inv-7", true); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	out, _ := run.Result(ctx)
	fmt.Println(out)
	// Output: paid
}

// Checkout waits up to a day for a "pay" signal with the amount paid.
type Checkout struct{}

func (Checkout) Run(ctx workflow.Context, cart string) (string, error) {
	pay := workflow.NewSignalChannel[int](ctx, "pay")
	i, err := workflow.Select(ctx, pay, workflow.NewTimer(ctx, 24*time.Hour))
	if err != nil || i == 1 {
		return cart + " abandoned", err
	}
	cents, err := pay.Receive(ctx)
	return fmt.Sprintf("%s paid %d", cart, cents), err
}

// A signal is buffered in the run's log until the code reads it: the sender
// needs no retry loop, even when it signals before the run reaches its
// Receive. SignalWithStart would also start the run if it did not exist.
func ExampleSignal() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	run, _ := workflow.Start(ctx, client, Checkout{}, "cart-9", workflow.WithRunID("checkout-cart-9"))
	if err := workflow.Signal(ctx, client, "checkout-cart-9", "pay", 1250); err != nil {
		fmt.Println(err)
	}
	out, _ := run.Result(ctx)
	fmt.Println(out)
	// Output: cart-9 paid 1250
}

// Count runs n steps in sequence, each adding one.
type Count struct{}

func (Count) Run(ctx workflow.Context, n int) (int, error) {
	v := 0
	for range n {
		var err error
		if v, err = workflow.Step(ctx, "add", func(_ context.Context, v int) (int, error) { return v + 1, nil }, v); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// The run cache keeps suspended runs in memory, so a run's next delivery resumes
// it instead of replaying it. Bound it to what the process can spare; the run
// after every 64 steps run inline in one delivery is handed to a fresh delivery,
// which resumes the cached execution.
func ExampleCacheConfig() {
	world, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{
		World: world,
		Cache: workflow.CacheConfig{MaxRuns: 1000, MaxBytes: 32 << 20, IdleTTL: 5 * time.Minute},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Serve(ctx, workflow.Use(Count{})) }()
	defer func() { cancel(); <-done }()

	run, err := workflow.Start(context.Background(), client, Count{}, 200)
	if err != nil {
		panic(err)
	}
	out, err := run.Result(context.Background())
	st := client.CacheStats()
	fmt.Println(out, err, st.Misses, st.Hits)
	// Output: 200 <nil> 1 3
}
