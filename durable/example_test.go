package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/lambdafake"
)

func Example() {
	// In Lambda, pass a *lambda.Client; here the local fake plays the service.
	svc := lambdafake.New("arn:aws:lambda:us-east-1:123456789012:function:f/durable-execution/e/1", json.RawMessage(`"ada"`), time.Unix(0, 0))
	h, err := durable.NewHandler(svc, func(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
		var name string
		if err := json.Unmarshal(in, &name); err != nil {
			return nil, err
		}
		greeting, err := durable.Step(dc, "greet", func(context.Context) (string, error) { return "hello " + name, nil })
		if err != nil {
			return nil, err
		}
		if err := dc.Wait("pause", time.Minute); err != nil {
			return nil, err
		}
		return greeting, nil
	}, durable.Options{Now: svc.Now})
	if err != nil {
		panic(err)
	}
	out, err := svc.Drive(context.Background(), h, 10)
	fmt.Println(out.Status, aws.ToString(out.Result), svc.Invocations, err)
	// Output: SUCCEEDED "hello ada" 2 <nil>
}

func ExampleContext_StartWait() {
	svc := lambdafake.New("arn:aws:lambda:us-east-1:123456789012:function:f/durable-execution/e/2", json.RawMessage(`{}`), time.Unix(0, 0))
	h, err := durable.NewHandler(svc, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		// A deadline that runs while the work does, cancelled when the work is done.
		deadline, err := dc.StartWait("deadline", 24*time.Hour)
		if err != nil {
			return nil, err
		}
		if _, err := durable.Step(dc, "work", func(context.Context) (int, error) { return 42, nil }); err != nil {
			return nil, err
		}
		if err := deadline.Cancel(); err != nil {
			return nil, err
		}
		if err := deadline.Wait(); errors.Is(err, durable.ErrWaitCancelled) {
			return "done before the deadline", nil
		}
		return "deadline passed", nil
	}, durable.Options{Now: svc.Now})
	if err != nil {
		panic(err)
	}
	out, err := svc.Drive(context.Background(), h, 10)
	fmt.Println(out.Status, aws.ToString(out.Result), svc.Invocations, svc.Now().Unix(), err)
	for _, op := range svc.Operations() {
		if op.Type == types.OperationTypeWait {
			fmt.Println(aws.ToString(op.Name), op.Status)
		}
	}
	// Output:
	// SUCCEEDED "done before the deadline" 1 0 <nil>
	// deadline CANCELLED
}

func ExampleRace() {
	svc := lambdafake.New("arn:aws:lambda:us-east-1:123456789012:function:f/durable-execution/e/3", json.RawMessage(`{}`), time.Unix(0, 0))
	var callbackID string
	h, err := durable.NewHandler(svc, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		// An approval that must come within two days, or the request escalates.
		approval, err := durable.CreateCallback[string](dc, "approval", durable.CallbackOptions{})
		if err != nil {
			return nil, err
		}
		if _, err := durable.Step(dc, "ask", func(context.Context) (bool, error) {
			callbackID = approval.ID() // in production: send it to the approver
			return true, nil
		}); err != nil {
			return nil, err
		}
		deadline, err := dc.StartWait("deadline", 48*time.Hour)
		if err != nil {
			return nil, err
		}
		i, err := durable.Race(dc, "approval-or-deadline", approval, deadline)
		if err != nil {
			return nil, err
		}
		if i == 1 {
			return "escalated", nil
		}
		if err := deadline.Cancel(); err != nil {
			return nil, err
		}
		return approval.Result()
	}, durable.Options{Now: svc.Now})
	if err != nil {
		panic(err)
	}
	// The first invocation asks and suspends; the approver answers after an hour.
	out, err := h.Handle(context.Background(), svc.Input())
	fmt.Println(out.Status, err)
	svc.Advance(time.Hour)
	if err := svc.CompleteCallback(callbackID, `"approved"`); err != nil {
		panic(err)
	}
	out, err = svc.Drive(context.Background(), h, 10)
	fmt.Println(out.Status, aws.ToString(out.Result), err)
	// Output:
	// PENDING <nil>
	// SUCCEEDED "approved" <nil>
}

func ExampleWaitForConditionWith() {
	svc := lambdafake.New("arn:aws:lambda:us-east-1:123456789012:function:f/durable-execution/e/4", json.RawMessage(`{}`), time.Unix(0, 0))
	// The state between checks is kept in cairn's integrity-checked envelope,
	// while the rest of the execution records plain JSON.
	envelope, err := durable.NewEnvelopeSerdes(nil)
	if err != nil {
		panic(err)
	}
	type job struct {
		Polls  int    `json:"polls"`
		Status string `json:"status"`
	}
	h, err := durable.NewHandler(svc, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
		j, err := durable.WaitForConditionWith(dc, "export", job{Status: "queued"}, durable.ConditionOptions{
			Serdes: envelope,
			Wait:   func(int) time.Duration { return 30 * time.Second },
		}, func(_ context.Context, j job) (job, bool, error) {
			j.Polls++
			if j.Polls == 3 { // in a real function: ask the export service
				j.Status = "done"
			}
			return j, j.Status == "done", nil
		})
		return j, err
	}, durable.Options{Now: svc.Now})
	if err != nil {
		panic(err)
	}
	out, err := svc.Drive(context.Background(), h, 10)
	fmt.Println(out.Status, aws.ToString(out.Result), svc.Invocations, err)
	// Output: SUCCEEDED {"polls":3,"status":"done"} 3 <nil>
}
