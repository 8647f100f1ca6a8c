// Package awsworld is cairn's AWS World: it stores workflow runs in one DynamoDB
// table, delivers work through SQS, and uses EventBridge Scheduler for deliveries
// due more than 15 minutes ahead. Any number of Lambda functions or processes can
// share one table: every append is one write (a conditional PutItem of the run view,
// or a TransactWriteItems) that commits only if the run's event count is unchanged
// since it was read (validated with worlds.Plan, the same state machine every World
// uses), so concurrent writers never lose or reorder events. [ConfigFromEnv] reads the Terraform module's environment;
// [Queue] is the SQS Lambda handler that executes deliveries, and [World.Serve]
// runs it outside Lambda; [HTTP] serves the RPC and webhook endpoints for a
// Function URL; [Sweep] re-sends deliveries whose message was lost and
// [World.Redrive] moves dead-lettered ones back; [CreateTable] creates the table
// for tests and DynamoDB Local, and worlds/aws/terraform provisions everything
// for production. See README.md for the table layout, IAM, the dead-letter
// runbook and limits.
package awsworld
