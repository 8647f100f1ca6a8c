package typed_test

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/typed"
)

func Example() {
	type Order struct {
		ID string `json:"id"`
	}
	h := typed.WrapHandler(typed.JSONCodec[Order]{}, func(ctx context.Context, o Order) error {
		fmt.Println("order", o.ID)
		return nil
	})
	// h is a middleware.Handler: give it to router.New or lambda.New.
	_ = h(context.Background(), messagingtest.NewMessage(`{"id":"o-7"}`, nil))
	// Output: order o-7
}
