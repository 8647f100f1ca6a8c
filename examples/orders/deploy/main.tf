# examples/orders on AWS: an SNS topic of order events fanned out to an SQS
# queue, a warehouse queue, the AWS World (the worlds/aws module: table, task
# queue, Scheduler for the 48-hour timer), an idempotency table for the
# charges, an SNS FIFO topic of "order shipped" notifications, and two Lambda
# functions on provided.al2023 arm64:
#
#   intake  SQS triggers on the orders and warehouse queues: starts one run per
#           order, signals the run an order's "packed" message names.
#   worker  SQS trigger on the World's queue (created by the module): runs them.

locals {
  lambda_dir = coalesce(var.lambda_dir, "${path.module}/build")
  functions  = toset(["worker", "intake"])
  packages   = { for f in local.functions : f => "${local.lambda_dir}/${f}.zip" }
  environment = merge(module.workflow.environment, {
    ORDERS_NAME          = var.name
    ORDERS_CHARGES_TABLE = aws_dynamodb_table.charges.name
    ORDERS_SHIPPED_TOPIC = aws_sns_topic.shipped.arn
  })
  intake_queues = { orders = aws_sqs_queue.orders, warehouse = aws_sqs_queue.warehouse }
}

module "workflow" {
  source = "../../../worlds/aws/terraform"

  name                = var.name
  tags                = var.tags
  deletion_protection = var.deletion_protection
  enable_scheduler    = true
  # The module creates the worker's SQS trigger once its policy is attached;
  # the intake function starts and signals runs, which the API policy grants.
  worker_function_name = aws_lambda_function.this["worker"].function_name
  worker_role_name     = aws_iam_role.this["worker"].name
  api_role_name        = aws_iam_role.this["intake"].name
}

# Charges' idempotency records (workflow/workflowidem), Powertools' layout.
resource "aws_dynamodb_table" "charges" {
  name         = "${var.name}-charges"
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "id"
  attribute {
    name = "id"
    type = "S"
  }
  ttl {
    attribute_name = "expiration"
    enabled        = true
  }
  deletion_protection_enabled = var.deletion_protection
}

resource "aws_sns_topic" "orders" {
  name = "${var.name}-placed"
}

resource "aws_sqs_queue" "dlq" {
  for_each = toset(["orders", "warehouse"])
  name     = "${var.name}-${each.key}-dlq"
}

resource "aws_sqs_queue" "orders" {
  name = "${var.name}-orders"
  # Six times the intake function's timeout, as AWS advises for Lambda triggers.
  visibility_timeout_seconds = 180
  redrive_policy             = jsonencode({ deadLetterTargetArn = aws_sqs_queue.dlq["orders"].arn, maxReceiveCount = 5 })
}

resource "aws_sqs_queue" "warehouse" {
  name                       = "${var.name}-warehouse"
  visibility_timeout_seconds = 180
  redrive_policy             = jsonencode({ deadLetterTargetArn = aws_sqs_queue.dlq["warehouse"].arn, maxReceiveCount = 10 })
}

resource "aws_sns_topic_subscription" "orders" {
  topic_arn            = aws_sns_topic.orders.arn
  protocol             = "sqs"
  endpoint             = aws_sqs_queue.orders.arn
  raw_message_delivery = true
}

data "aws_iam_policy_document" "orders_queue" {
  statement {
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.orders.arn]
    principals {
      type        = "Service"
      identifiers = ["sns.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [aws_sns_topic.orders.arn]
    }
  }
}

resource "aws_sqs_queue_policy" "orders" {
  queue_url = aws_sqs_queue.orders.id
  policy    = data.aws_iam_policy_document.orders_queue.json
}

# FIFO, so a publish retried by the workflow (same run and step, same
# deduplication ID) is delivered once to the topic's FIFO subscribers.
resource "aws_sns_topic" "shipped" {
  name       = "${var.name}-shipped.fifo"
  fifo_topic = true
}

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  for_each           = local.functions
  name               = "${var.name}-${each.key}"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

data "aws_partition" "current" {}

resource "aws_iam_role_policy_attachment" "logs" {
  for_each   = local.functions
  role       = aws_iam_role.this[each.key].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
}

# The worker charges (the idempotency table) and publishes "order shipped".
data "aws_iam_policy_document" "worker" {
  statement {
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.charges.arn]
  }
  statement {
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.shipped.arn]
  }
}

resource "aws_iam_role_policy" "worker" {
  name   = "orders"
  role   = aws_iam_role.this["worker"].name
  policy = data.aws_iam_policy_document.worker.json
}

# The intake function reads its two queues.
data "aws_iam_policy_document" "intake" {
  statement {
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]
    resources = [for q in local.intake_queues : q.arn]
  }
}

resource "aws_iam_role_policy" "intake" {
  name   = "orders"
  role   = aws_iam_role.this["intake"].name
  policy = data.aws_iam_policy_document.intake.json
}

resource "aws_cloudwatch_log_group" "this" {
  for_each          = local.functions
  name              = "/aws/lambda/${var.name}-${each.key}"
  retention_in_days = 14
}

resource "aws_lambda_function" "this" {
  for_each         = local.functions
  function_name    = "${var.name}-${each.key}"
  role             = aws_iam_role.this[each.key].arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  filename         = local.packages[each.key]
  source_code_hash = fileexists(local.packages[each.key]) ? filebase64sha256(local.packages[each.key]) : null
  timeout          = 30
  memory_size      = 256

  environment {
    variables = local.environment
  }

  lifecycle {
    precondition {
      condition     = fileexists(local.packages[each.key])
      error_message = "No ${local.packages[each.key]}: build the functions first (see the README)."
    }
  }

  depends_on = [aws_iam_role_policy_attachment.logs, aws_cloudwatch_log_group.this]
}

resource "aws_lambda_event_source_mapping" "intake" {
  for_each                = local.intake_queues
  event_source_arn        = each.value.arn
  function_name           = aws_lambda_function.this["intake"].arn
  batch_size              = 10
  function_response_types = ["ReportBatchItemFailures"]
  depends_on              = [aws_iam_role_policy.intake]
}
