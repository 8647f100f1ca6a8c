package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

// OverLimit is a step error type registered with the client, so workflow code
// can match it with errors.As after the step's failure went through the log.
type OverLimit struct {
	Limit int `json:"limit"`
}

func (e *OverLimit) Error() string { return fmt.Sprintf("over the limit of %d", e.Limit) }

// Charge fails its steps in two ways and tells what it saw.
type Charge struct{}

func (Charge) Run(ctx workflow.Context, amount int) (string, error) {
	once := workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 1})
	_, err := workflow.Step(ctx, "charge", func(context.Context, int) (int, error) {
		return 0, fmt.Errorf("card service: %w", &OverLimit{Limit: 100})
	}, amount, once)
	var ol *OverLimit
	if !errors.As(err, &ol) {
		return "", err
	}
	_, err = workflow.Step(ctx, "reserve", func(context.Context, int) (int, error) {
		return 0, workflow.NewNonRetryableError("stock", "out of stock", map[string]int{"left": 2})
	}, amount)
	var app *workflow.ApplicationError
	if !errors.As(err, &app) {
		return "", err
	}
	left, _ := workflow.ErrorDetails[map[string]int](err)
	return fmt.Sprintf("limit %d; %s: %s, %d left", ol.Limit, app.Type, app.Message, left["left"]), nil
}

func errorsClient() (*workflow.Client, func()) {
	world, err := local.Open(context.Background(), local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	client, err := workflow.NewClient(workflow.Config{
		World:        world,
		PollInterval: 20 * time.Millisecond,
		ErrorTypes:   []workflow.ErrorType{workflow.NewErrorType[*OverLimit]("billing.OverLimit")},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = client.Serve(ctx, workflow.Use(Charge{}), workflow.Use(Transfer{}))
	}()
	return client, func() { cancel(); <-done; _ = world.Close() }
}

func ExampleNewError() {
	client, stop := errorsClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, Charge{}, 250)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Result(ctx))
	// Output: limit 100; stock: out of stock, 2 left <nil>
}

// Transfer copies items in a step that heartbeats its progress; a retried
// attempt resumes from the last recorded item.
type Transfer struct{}

func (Transfer) Run(ctx workflow.Context, items int) (int, error) {
	return workflow.Step(ctx, "copy", func(sctx context.Context, n int) (int, error) {
		from, err := workflow.HeartbeatDetails[int](sctx)
		if errors.Is(err, workflow.ErrNoHeartbeatDetails) {
			from = 0
		} else if err != nil {
			return 0, err
		}
		for i := from; i < n; i++ {
			if err := workflow.Heartbeat(sctx, i); err != nil {
				return 0, err
			}
			// ... copy item i ...
		}
		return n - from, nil
	}, items, workflow.WithHeartbeatTimeout(10*time.Second))
}

func ExampleHeartbeat() {
	client, stop := errorsClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, Transfer{}, 5)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.Result(ctx))
	// Output: 5 <nil>
}

// A zero-valued policy is valid: unlimited attempts, 1s, doubling, capped at
// 100s; a bad one names its field.
func ExampleRetryPolicy() {
	var p workflow.RetryPolicy
	fmt.Println(p.Validate(), p.Backoff(1), p.Backoff(3), p.Backoff(20))
	fmt.Println(workflow.RetryPolicy{Multiplier: 0.5}.Validate())
	// Output:
	// <nil> 1s 4s 1m40s
	// workflow: invalid RetryPolicy.Multiplier 0.5: must be 0 (meaning 2) or a finite number of at least 1
}
