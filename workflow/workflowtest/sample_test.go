package workflowtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/workflow"
)

// Order is the input of the sample order workflow whose recorded histories are in
// testdata.
type Order struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

// Approval is what the approver sends to the order's hook.
type Approval struct {
	OK bool   `json:"ok"`
	By string `json:"by"`
}

// Receipt is the sample workflow's output.
type Receipt struct {
	Status     string    `json:"status"`
	Reserved   string    `json:"reserved,omitempty"`
	Charge     string    `json:"charge,omitempty"`
	ApprovedBy string    `json:"approvedBy,omitempty"`
	At         time.Time `json:"at"`
}

func reserve(_ context.Context, o Order) (string, error) { return "res_" + o.ID, nil }

func charge(_ context.Context, o Order) (string, error) {
	return fmt.Sprintf("ch_%s_%d", o.ID, o.Cents), nil
}

func fraudCheck(_ context.Context, o Order) (bool, error) { return o.Cents < 100000, nil }

// OrderV1 reserves stock, waits for an approval, waits out a cooling-off period
// and charges.
type OrderV1 struct{}

func (OrderV1) WorkflowName() string { return "order" }

func (OrderV1) Run(ctx workflow.Context, o Order) (Receipt, error) {
	res, err := workflow.Step(ctx, "reserve", reserve, o)
	if err != nil {
		return Receipt{}, err
	}
	return approveAndCharge(ctx, o, res)
}

func approveAndCharge(ctx workflow.Context, o Order, res string) (Receipt, error) {
	hook, err := workflow.CreateHook[Approval](ctx, workflow.HookOptions{Token: "approve-" + o.ID})
	if err != nil {
		return Receipt{}, err
	}
	a, err := hook.Receive(ctx)
	if err != nil {
		return Receipt{}, err
	}
	if !a.OK {
		return Receipt{Status: "rejected", Reserved: res, At: workflow.Now(ctx)}, nil
	}
	if err := workflow.Sleep(ctx, coolingOff); err != nil {
		return Receipt{}, err
	}
	ch, err := workflow.Step(ctx, "charge", charge, o)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{Status: "charged", Reserved: res, Charge: ch, ApprovedBy: a.By, At: workflow.Now(ctx)}, nil
}

// coolingOff is short so the histories in testdata could be recorded with real
// time; in an Env it passes at once whatever its length.
const coolingOff = time.Second

// OrderV2 inserts a fraud check after the reservation, unversioned:
// runs recorded under OrderV1 no longer replay.
type OrderV2 struct{}

func (OrderV2) WorkflowName() string { return "order" }

func (OrderV2) Run(ctx workflow.Context, o Order) (Receipt, error) {
	res, err := workflow.Step(ctx, "reserve", reserve, o)
	if err != nil {
		return Receipt{}, err
	}
	ok, err := workflow.Step(ctx, "fraud check", fraudCheck, o)
	if err != nil {
		return Receipt{}, err
	}
	if !ok {
		return Receipt{}, workflow.Fatal(errors.New("order flagged"))
	}
	return approveAndCharge(ctx, o, res)
}

// OrderV3 appends a step after the charge: runs recorded under OrderV1 that are
// still waiting replay (the new step comes later), finished ones do not.
type OrderV3 struct{}

func (OrderV3) WorkflowName() string { return "order" }

func (OrderV3) Run(ctx workflow.Context, o Order) (Receipt, error) {
	r, err := OrderV1{}.Run(ctx, o)
	if err != nil || r.Status != "charged" {
		return r, err
	}
	if _, err := workflow.Step(ctx, "email receipt", func(context.Context, Receipt) (bool, error) { return true, nil }, r); err != nil {
		return Receipt{}, err
	}
	return r, nil
}

// OrderTwoApprovals waits for a second approval the recorded runs never got.
type OrderTwoApprovals struct{}

func (OrderTwoApprovals) WorkflowName() string { return "order" }

func (OrderTwoApprovals) Run(ctx workflow.Context, o Order) (Receipt, error) {
	res, err := workflow.Step(ctx, "reserve", reserve, o)
	if err != nil {
		return Receipt{}, err
	}
	hook, err := workflow.CreateHook[Approval](ctx, workflow.HookOptions{Token: "approve-" + o.ID})
	if err != nil {
		return Receipt{}, err
	}
	for range 2 {
		if _, err := hook.Receive(ctx); err != nil {
			return Receipt{}, err
		}
	}
	return Receipt{Status: "approved twice", Reserved: res}, nil
}

// OrderRefuses fails where OrderV1 completed, without changing its operations.
type OrderRefuses struct{}

func (OrderRefuses) WorkflowName() string { return "order" }

func (OrderRefuses) Run(ctx workflow.Context, o Order) (Receipt, error) {
	if _, err := (OrderV1{}).Run(ctx, o); err != nil {
		return Receipt{}, err
	}
	return Receipt{}, errors.New("refused after all")
}

// OrderPanics panics once the reservation is made.
type OrderPanics struct{}

func (OrderPanics) WorkflowName() string { return "order" }

func (OrderPanics) Run(ctx workflow.Context, o Order) (Receipt, error) {
	if _, err := workflow.Step(ctx, "reserve", reserve, o); err != nil {
		return Receipt{}, err
	}
	panic("no approvals today")
}
