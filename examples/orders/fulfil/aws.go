package fulfil

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/messaging/producer"
	"github.com/cairn-go/cairn/workflow"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Environment variables the deployment's functions read, besides the World's
// own (awsworld.ConfigFromEnv).
const (
	EnvChargesTable = "ORDERS_CHARGES_TABLE" // the idempotency table of the charges
	EnvShippedTopic = "ORDERS_SHIPPED_TOPIC" // the "order shipped" SNS topic's ARN
)

// Deployment is what a function of the deployment needs: the AWS World, a
// client over it, and the workflow with its AWS dependencies.
type Deployment struct {
	World    *awsworld.World
	Client   *workflow.Client
	Workflow Workflow
}

// OpenAWS builds the Deployment from the function's environment. Inventory
// and payments are the example's in-memory stand-ins: replace them with your
// services' clients.
func OpenAWS(ctx context.Context, getenv func(string) string, log *slog.Logger) (*Deployment, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("orders: AWS configuration: %w", err)
	}
	wcfg, err := awsworld.ConfigFromEnv(getenv, scheduler.NewFromConfig(cfg))
	if err != nil {
		return nil, err
	}
	wcfg.Logger = log
	db := dynamodb.NewFromConfig(cfg)
	world, err := awsworld.New(wcfg, db, sqs.NewFromConfig(cfg))
	if err != nil {
		return nil, err
	}
	for _, v := range []string{EnvChargesTable, EnvShippedTopic} {
		if getenv(v) == "" {
			return nil, fmt.Errorf("orders: %s is not set", v)
		}
	}
	store, err := idynamodb.New(db, idynamodb.Options{TableName: getenv(EnvChargesTable)})
	if err != nil {
		return nil, err
	}
	charges, err := idempotency.New(store, idempotency.Options{KeyPrefix: "orders-charge", EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input", Logger: log})
	if err != nil {
		return nil, err
	}
	pub, err := producer.New(sns.NewFromConfig(cfg))
	if err != nil {
		return nil, err
	}
	client, err := workflow.NewClient(workflow.Config{World: world, Logger: log})
	if err != nil {
		return nil, err
	}
	wf := Workflow{Inventory: &MemoryInventory{}, Payments: &CountingPayments{}, Charges: charges, Publisher: pub, ShippedTopic: getenv(EnvShippedTopic)}
	return &Deployment{World: world, Client: client, Workflow: wf}, nil
}
