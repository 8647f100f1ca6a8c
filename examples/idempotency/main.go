// Package main demonstrates durable idempotency for a typed Lambda handler.
//
// Set IDEMPOTENCY_TABLE to an existing table with a String partition key "id"; the
// execution role needs dynamodb:GetItem, PutItem, UpdateItem and DeleteItem. Invoke
// with {"id":"ORD-123","amount":42}: the handler returns {"order_id":"ORD-123"}, and a
// repeated request with the same id and amount replays that response without running
// the business logic. A different amount for the same id fails payload validation; an
// overlapping request fails with an in-progress error. Build with CGO_ENABLED=0.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cairn-go/cairn/idempotency"
	persistence "github.com/cairn-go/cairn/idempotency/dynamodb"
)

// Order is the invocation payload.
type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// Result is the stored and replayed response.
type Result struct {
	OrderID string `json:"order_id"`
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := persistence.New(dynamodb.NewFromConfig(cfg), persistence.Options{TableName: os.Getenv("IDEMPOTENCY_TABLE")})
	if err != nil {
		log.Fatal(err)
	}
	manager, err := idempotency.New(store, idempotency.Options{KeyPrefix: "process-order", EventKeyJMESPath: "id", PayloadValidationJMESPath: "amount", ThrowOnNoKey: true})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(idempotency.WrapHandler(manager, processOrder))
}

func processOrder(ctx context.Context, event Order) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return Result{OrderID: event.ID}, nil
}
