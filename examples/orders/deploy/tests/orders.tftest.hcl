# Offline checks of the deployment's wiring with a mocked AWS provider. The
# archives in tests/lambda are placeholders: plans only hash them.
# Run with: terraform init -backend=false && terraform test

mock_provider "aws" {
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_data "aws_caller_identity" {
    defaults = { account_id = "123456789012" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
  mock_resource "aws_iam_role" {
    defaults = { arn = "arn:aws:iam::123456789012:role/mock" }
  }
  mock_resource "aws_iam_policy" {
    defaults = { arn = "arn:aws:iam::123456789012:policy/mock" }
  }
  mock_resource "aws_lambda_function" {
    defaults = { arn = "arn:aws:lambda:eu-west-1:123456789012:function:mock" }
  }
  mock_resource "aws_sns_topic" {
    defaults = { arn = "arn:aws:sns:eu-west-1:123456789012:mock" }
  }
  mock_resource "aws_sqs_queue" {
    defaults = { arn = "arn:aws:sqs:eu-west-1:123456789012:mock" }
  }
  mock_resource "aws_dynamodb_table" {
    defaults = { arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/mock" }
  }
}

variables {
  name                = "t"
  lambda_dir          = "tests/lambda"
  deletion_protection = false
}

run "wiring" {
  command = apply

  assert {
    condition     = aws_sns_topic.shipped.fifo_topic && endswith(aws_sns_topic.shipped.name, ".fifo")
    error_message = "the shipped topic must be FIFO, so a retried publish is deduplicated"
  }
  assert {
    condition     = aws_sns_topic_subscription.orders.protocol == "sqs" && aws_sns_topic_subscription.orders.raw_message_delivery
    error_message = "the orders topic must deliver raw messages to the orders queue"
  }
  assert {
    condition = alltrue([for m in values(aws_lambda_event_source_mapping.intake) :
    contains(m.function_response_types, "ReportBatchItemFailures")])
    error_message = "the intake triggers must report batch item failures, or one bad record redelivers its batch"
  }
  assert {
    condition     = length(aws_lambda_event_source_mapping.intake) == 2
    error_message = "the intake function must be triggered by the orders and warehouse queues"
  }
  assert {
    condition = alltrue([for f in values(aws_lambda_function.this) :
    f.environment[0].variables["ORDERS_NAME"] == "t" && f.environment[0].variables["ORDERS_CHARGES_TABLE"] == "t-charges" && f.runtime == "provided.al2023"])
    error_message = "every function must get the orders environment (queue names, charges table, shipped topic)"
  }
  assert {
    condition     = aws_lambda_function.this["intake"].environment[0].variables["WORKFLOW_TABLE"] != null
    error_message = "the functions must get the AWS World's environment from the module"
  }
  assert {
    condition     = aws_dynamodb_table.charges.hash_key == "id" && aws_dynamodb_table.charges.ttl[0].attribute_name == "expiration"
    error_message = "the charges table must have the idempotency layout (id, expiration TTL)"
  }
}

run "needs_built_functions" {
  command = plan
  variables {
    lambda_dir = "tests/nowhere"
  }
  expect_failures = [aws_lambda_function.this]
}
