package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/memory"
)

func Example() {
	// In production the store is idempotency/dynamodb or idempotency/redis.
	store := memory.New()
	manager, err := idempotency.New(store, idempotency.Options{
		KeyPrefix:                 "process-order",
		EventKeyJMESPath:          "id",
		PayloadValidationJMESPath: "amount",
		ThrowOnNoKey:              true,
		LookupEnv:                 func(string) (string, bool) { return "", false },
	})
	if err != nil {
		panic(err)
	}
	type Order struct {
		ID     string `json:"id"`
		Amount int    `json:"amount"`
	}
	type Result struct {
		OrderID string `json:"order_id"`
	}
	runs := 0
	handler := idempotency.WrapHandler(manager, func(ctx context.Context, o Order) (Result, error) {
		runs++
		return Result{OrderID: o.ID}, nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the Lambda deadline sets the lease
	defer cancel()
	first, _ := handler(ctx, Order{ID: "ORD-123", Amount: 42})
	again, _ := handler(ctx, Order{ID: "ORD-123", Amount: 42})
	_, err = handler(ctx, Order{ID: "ORD-123", Amount: 43})
	fmt.Println(first.OrderID, again.OrderID, runs, errors.Is(err, idempotency.ErrValidation))

	key, _ := idempotency.Key("process-order", "ORD-123", idempotency.MD5)
	fmt.Println(key)
	// Output:
	// ORD-123 ORD-123 1 true
	// process-order#zyvzq/OoRNqWacgwZ/5VhQ==
}

func ExampleCanonicalJSON() {
	out, _ := idempotency.CanonicalJSON(map[string]any{"b": 1e21, "a": []any{"<é>", -0.0}})
	fmt.Println(string(out))
	// Output: {"a":["<é>",0],"b":1e+21}
}
