package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/workflow"
)

// Reminder waits a day for an approval and sends a reminder when none came.
type Reminder struct{}

func (Reminder) Run(ctx workflow.Context, token string) (string, error) {
	hook, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	i, err := workflow.Select(ctx, hook, workflow.NewTimer(ctx, 24*time.Hour))
	if err != nil {
		return "", err
	}
	if i == 1 {
		return workflow.Step(ctx, "remind", func(context.Context, string) (string, error) { return "reminder sent", nil }, token)
	}
	who, err := hook.Receive(ctx)
	return "approved by " + who, err
}

// Booking reserves a room and a flight; cancelled while it waits for the
// customer's confirmation, it releases the room under WithoutCancel.
type Booking struct{}

func (Booking) Run(ctx workflow.Context, trip string) (string, error) {
	room, err := workflow.Step(ctx, "reserve room", func(context.Context, string) (string, error) { return "room-12", nil }, trip)
	if err != nil {
		return "", err
	}
	confirm, err := workflow.CreateHook[bool](ctx, workflow.HookOptions{Token: "confirm-" + trip})
	if err != nil {
		return "", err
	}
	if _, err := confirm.Receive(ctx); errors.Is(err, workflow.ErrCancelled) {
		cleanup := workflow.WithoutCancel(ctx)
		if _, rerr := workflow.Step(cleanup, "release room", func(_ context.Context, r string) (string, error) {
			fmt.Println("released", r)
			return r, nil
		}, room); rerr != nil {
			return "", rerr
		}
		return "", err
	} else if err != nil {
		return "", err
	}
	return "booked " + room, nil
}

// waitHook waits until the hook with token exists.
func waitHook(c *workflow.Client, token string) {
	for {
		if _, err := c.World().GetHookByToken(context.Background(), token); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ExampleSelect() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, Reminder{}, "approve-42")
	if err != nil {
		panic(err)
	}
	waitHook(client, "approve-42")
	if _, err := workflow.ResumeHook(ctx, client, "approve-42", "ada"); err != nil {
		panic(err)
	}
	out, err := run.Result(ctx)
	fmt.Println(out, err)
	// Output: approved by ada <nil>
}

func ExampleWithoutCancel() {
	client, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	run, err := workflow.Start(ctx, client, Booking{}, "lisbon")
	if err != nil {
		panic(err)
	}
	waitHook(client, "confirm-lisbon")
	if err := run.Cancel(ctx, "customer left"); err != nil {
		panic(err)
	}
	_, err = run.Result(ctx)
	fmt.Println(errors.Is(err, workflow.ErrRunCancelled))
	// Output:
	// released room-12
	// true
}
