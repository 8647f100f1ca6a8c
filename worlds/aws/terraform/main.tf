terraform {
  required_version = ">= 1.9" # validations that read other variables
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.30"
    }
  }
}

data "aws_region" "current" {}
data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  scheduler_group = var.enable_scheduler ? aws_scheduler_schedule_group.this[0].name : null
  queue_arns      = concat([aws_sqs_queue.task.arn], [for q in aws_sqs_queue.routed : q.arn])
  table_resources = [aws_dynamodb_table.this.arn, "${aws_dynamodb_table.this.arn}/index/*"]
  # var.retention in seconds: sum of its number-unit parts ("1h30m" = 5400).
  retention_seconds = sum(concat([0], [for m in regexall("([0-9]+(?:\\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", var.retention) : tonumber(m[0]) * { ns = 1e-9, us = 1e-6, "µs" = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600 }[m[1]]]))
  retain            = local.retention_seconds > 0
  schedule_arn      = var.enable_scheduler ? "arn:${data.aws_partition.current.partition}:scheduler:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:schedule/${local.scheduler_group}/go-workflow-*" : null
}

# One table, string keys pk/sk; the list and list_group indexes project keys and
# status, the attrs index keys only.
resource "aws_dynamodb_table" "this" {
  name                        = var.name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection
  tags                        = var.tags

  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "sk"
    type = "S"
  }
  attribute {
    name = "list_pk"
    type = "S"
  }
  attribute {
    name = "list_sk"
    type = "S"
  }
  attribute {
    name = "list_group_pk"
    type = "S"
  }
  attribute {
    name = "list_group_sk"
    type = "S"
  }
  attribute {
    name = "attr_pk"
    type = "S"
  }
  attribute {
    name = "attr_sk"
    type = "S"
  }

  global_secondary_index {
    name               = "list"
    hash_key           = "list_pk"
    range_key          = "list_sk"
    projection_type    = "INCLUDE"
    non_key_attributes = ["status"]
  }
  global_secondary_index {
    name               = "list_group"
    hash_key           = "list_group_pk"
    range_key          = "list_group_sk"
    projection_type    = "INCLUDE"
    non_key_attributes = ["status"]
  }
  # Sparse: only the items of run attributes (sk ATTR#<key>) carry its keys,
  # for listings by attribute (RunFilter.Attributes).
  global_secondary_index {
    name            = "attrs"
    hash_key        = "attr_pk"
    range_key       = "attr_sk"
    projection_type = "KEYS_ONLY"
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }
  server_side_encryption {
    enabled = true
  }
}

resource "aws_sqs_queue" "task_dlq" {
  name                      = "${var.name}-tasks-dlq"
  message_retention_seconds = var.message_retention_seconds
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_sqs_queue" "task" {
  name                       = "${var.name}-tasks"
  visibility_timeout_seconds = var.visibility_timeout_seconds
  message_retention_seconds  = var.message_retention_seconds
  sqs_managed_sse_enabled    = true
  tags                       = var.tags
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.task_dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

resource "aws_sqs_queue" "routed_dlq" {
  for_each                  = var.queues
  name                      = each.value.fifo ? "${var.name}-${each.key}-dlq.fifo" : "${var.name}-${each.key}-dlq"
  fifo_queue                = each.value.fifo ? true : null
  message_retention_seconds = var.message_retention_seconds
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_sqs_queue" "routed" {
  for_each                    = var.queues
  name                        = each.value.fifo ? "${var.name}-${each.key}.fifo" : "${var.name}-${each.key}"
  fifo_queue                  = each.value.fifo ? true : null
  content_based_deduplication = each.value.fifo ? true : null
  visibility_timeout_seconds  = coalesce(each.value.visibility_timeout_seconds, var.visibility_timeout_seconds)
  message_retention_seconds   = var.message_retention_seconds
  sqs_managed_sse_enabled     = true
  tags                        = var.tags
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.routed_dlq[each.key].arn
    maxReceiveCount     = coalesce(each.value.max_receive_count, var.max_receive_count)
  })
}

# Without ReportBatchItemFailures Lambda deletes failed messages with the batch.
resource "aws_lambda_event_source_mapping" "task" {
  count                   = var.worker_function_name == null ? 0 : 1
  event_source_arn        = aws_sqs_queue.task.arn
  function_name           = var.worker_function_name
  batch_size              = var.batch_size
  function_response_types = ["ReportBatchItemFailures"]
  # Creating a mapping checks that the function's role may receive from the queue.
  depends_on = [aws_iam_role_policy_attachment.worker]

  dynamic "scaling_config" {
    for_each = var.maximum_concurrency == null ? [] : [var.maximum_concurrency]
    content {
      maximum_concurrency = scaling_config.value
    }
  }
}

resource "aws_lambda_event_source_mapping" "routed" {
  for_each                = var.worker_function_name == null ? {} : var.queues
  event_source_arn        = aws_sqs_queue.routed[each.key].arn
  function_name           = var.worker_function_name
  batch_size              = each.value.batch_size
  function_response_types = ["ReportBatchItemFailures"]
  depends_on              = [aws_iam_role_policy_attachment.worker]

  dynamic "scaling_config" {
    for_each = each.value.maximum_concurrency == null ? [] : [each.value.maximum_concurrency]
    content {
      maximum_concurrency = scaling_config.value
    }
  }
}

resource "aws_scheduler_schedule_group" "this" {
  count = var.enable_scheduler ? 1 : 0
  name  = var.name
  tags  = var.tags
}

data "aws_iam_policy_document" "scheduler_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

# The role Scheduler assumes to send due deliveries to the queues.
data "aws_iam_policy_document" "scheduler_send" {
  statement {
    actions   = ["sqs:SendMessage"]
    resources = local.queue_arns
  }
}

resource "aws_iam_role" "scheduler" {
  count              = var.enable_scheduler ? 1 : 0
  name               = "${var.name}-scheduler"
  assume_role_policy = data.aws_iam_policy_document.scheduler_assume.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "scheduler" {
  count  = var.enable_scheduler ? 1 : 0
  name   = "send-to-queues"
  role   = aws_iam_role.scheduler[0].id
  policy = data.aws_iam_policy_document.scheduler_send.json
}

data "aws_iam_policy_document" "worker" {
  statement {
    sid       = "Table"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem"]
    resources = local.table_resources
  }
  dynamic "statement" {
    for_each = local.retain ? [1] : []
    content {
      sid       = "ExpireRuns"
      actions   = ["dynamodb:BatchWriteItem"]
      resources = local.table_resources
    }
  }
  statement {
    sid       = "Queues"
    actions   = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
    resources = local.queue_arns
  }
  dynamic "statement" {
    for_each = var.enable_scheduler ? [1] : []
    content {
      sid       = "Schedules"
      actions   = ["scheduler:CreateSchedule", "scheduler:DeleteSchedule"]
      resources = [local.schedule_arn]
    }
  }
  dynamic "statement" {
    for_each = var.enable_scheduler ? [1] : []
    content {
      sid       = "PassSchedulerRole"
      actions   = ["iam:PassRole"]
      resources = [aws_iam_role.scheduler[0].arn]
    }
  }
}

data "aws_iam_policy_document" "api" {
  statement {
    sid       = "Table"
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem"]
    resources = local.table_resources
  }
  statement {
    sid       = "Queues"
    actions   = ["sqs:SendMessage"]
    resources = local.queue_arns
  }
  # runs.cancel deletes the run's pending schedules (sleeps, retries beyond 15 minutes).
  dynamic "statement" {
    for_each = var.enable_scheduler ? [1] : []
    content {
      sid       = "CancelSchedules"
      actions   = ["scheduler:DeleteSchedule"]
      resources = [local.schedule_arn]
    }
  }
  # A cancelled run schedules its own expiry; CreateSchedule needs PassRole on the target role.
  dynamic "statement" {
    for_each = var.enable_scheduler && local.retain ? [1] : []
    content {
      sid       = "ScheduleExpiry"
      actions   = ["scheduler:CreateSchedule"]
      resources = [local.schedule_arn]
    }
  }
  dynamic "statement" {
    for_each = var.enable_scheduler && local.retain ? [1] : []
    content {
      sid       = "PassSchedulerRole"
      actions   = ["iam:PassRole"]
      resources = [aws_iam_role.scheduler[0].arn]
    }
  }
}

resource "aws_iam_policy" "worker" {
  name        = "${var.name}-worker"
  description = "Workflow queue worker: table, queues and schedules."
  policy      = data.aws_iam_policy_document.worker.json
  tags        = var.tags
}

resource "aws_iam_policy" "api" {
  name        = "${var.name}-api"
  description = "Workflow HTTP API: table and queue."
  policy      = data.aws_iam_policy_document.api.json
  tags        = var.tags
}

resource "aws_iam_role_policy_attachment" "worker" {
  count      = var.worker_role_name == null ? 0 : 1
  role       = var.worker_role_name
  policy_arn = aws_iam_policy.worker.arn
}

resource "aws_iam_role_policy_attachment" "api" {
  count      = var.api_role_name == null ? 0 : 1
  role       = var.api_role_name
  policy_arn = aws_iam_policy.api.arn
}
