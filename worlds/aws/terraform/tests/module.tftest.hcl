# Offline checks of the module's wiring with a mocked AWS provider: the
# environment the functions read, and the IAM actions each feature grants.
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
  # Policy documents render nothing under a mock; the tests read their statements.
  mock_data "aws_iam_policy_document" {
    defaults = { json = "{}" }
  }
}

variables {
  name = "wf"
}

run "defaults_keep_runs_forever" {
  command = plan

  assert {
    condition     = output.environment.WORKFLOW_RETENTION == "0s"
    error_message = "default retention must be forever (0s), got ${output.environment.WORKFLOW_RETENTION}"
  }
  assert {
    condition     = output.environment.WORKFLOW_LIST_SHARDS == "16"
    error_message = "default list shards must be 16"
  }
  assert {
    condition = toset(keys(output.environment)) == toset([
      "WORKFLOW_TABLE", "WORKFLOW_QUEUE_URL", "WORKFLOW_QUEUE_ARN", "WORKFLOW_QUEUES", "WORKFLOW_RETENTION",
      "WORKFLOW_LIST_SHARDS", "WORKFLOW_DEAD_LETTER_RETENTION", "WORKFLOW_SCHEDULER_GROUP", "WORKFLOW_SCHEDULER_ROLE_ARN",
    ])
    error_message = "environment keys: ${join(", ", keys(output.environment))}"
  }
  assert {
    condition     = output.environment.WORKFLOW_DEAD_LETTER_RETENTION == "1209600s"
    error_message = "WORKFLOW_DEAD_LETTER_RETENTION must be the dead-letter queues' retention"
  }
  assert {
    condition     = output.environment.WORKFLOW_TABLE == "wf" && output.environment.WORKFLOW_SCHEDULER_GROUP == "wf"
    error_message = "table and schedule group are named after var.name"
  }
  assert {
    condition     = !contains(flatten([for s in data.aws_iam_policy_document.worker.statement : s.actions]), "dynamodb:BatchWriteItem")
    error_message = "without retention the worker must not get BatchWriteItem"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.api.statement : s.actions])) == toset(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem", "sqs:SendMessage", "scheduler:DeleteSchedule"])
    error_message = "API without retention: table, SendMessage and DeleteSchedule (cancel deletes schedules)"
  }
  assert {
    condition     = length(aws_lambda_event_source_mapping.task) == 0
    error_message = "no worker function, no event source mapping"
  }
}

run "retention_grants_expiry" {
  command = plan
  variables {
    retention = "72h"
  }

  assert {
    condition     = output.environment.WORKFLOW_RETENTION == "72h" && output.retention == "72h"
    error_message = "WORKFLOW_RETENTION must carry var.retention"
  }
  assert {
    condition     = contains(flatten([for s in data.aws_iam_policy_document.worker.statement : s.actions]), "dynamodb:BatchWriteItem")
    error_message = "with retention the worker deletes expired runs with BatchWriteItem"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.api.statement : s.actions])) == toset(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem", "sqs:SendMessage", "scheduler:DeleteSchedule", "scheduler:CreateSchedule", "iam:PassRole"])
    error_message = "API with retention: a cancelled run schedules its expiry (CreateSchedule, PassRole)"
  }
}

run "zero_retention_is_forever" {
  command = plan
  variables {
    retention = "0h0m"
  }

  assert {
    condition     = output.environment.WORKFLOW_RETENTION == "0s"
    error_message = "a zero duration keeps runs forever"
  }
  assert {
    condition     = !contains(flatten([for s in data.aws_iam_policy_document.worker.statement : s.actions]), "dynamodb:BatchWriteItem")
    error_message = "a zero retention grants nothing"
  }
}

run "short_retention_without_scheduler" {
  command = plan
  variables {
    retention        = "15m"
    enable_scheduler = false
  }

  assert {
    condition     = !contains(keys(output.environment), "WORKFLOW_SCHEDULER_ROLE_ARN")
    error_message = "no scheduler, no scheduler variables"
  }
  assert {
    condition     = length([for s in data.aws_iam_policy_document.worker.statement : s if anytrue([for a in s.actions : startswith(a, "scheduler:") || a == "iam:PassRole"])]) == 0
    error_message = "no scheduler, no scheduler grants for the worker"
  }
  assert {
    condition     = toset(flatten([for s in data.aws_iam_policy_document.api.statement : s.actions])) == toset(["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem", "sqs:SendMessage"])
    error_message = "no scheduler, no scheduler grants for the API"
  }
}

run "long_retention_needs_scheduler" {
  command = plan
  variables {
    retention        = "15m1s"
    enable_scheduler = false
  }
  expect_failures = [var.retention]
}

run "retention_must_be_a_duration" {
  command = plan
  variables {
    retention = "3 days"
  }
  expect_failures = [var.retention]
}

run "worker_mappings_report_batch_item_failures" {
  # Applied against the mock, so queue URLs and ARNs are known.
  command = apply
  variables {
    worker_function_name = "wf-worker"
    maximum_concurrency  = 5
    queues = {
      ordered = { fifo = true, maximum_concurrency = 2 }
    }
  }

  assert {
    condition     = aws_lambda_event_source_mapping.task[0].function_response_types == toset(["ReportBatchItemFailures"]) && aws_lambda_event_source_mapping.routed["ordered"].function_response_types == toset(["ReportBatchItemFailures"])
    error_message = "every mapping must report batch item failures"
  }
  assert {
    condition     = aws_lambda_event_source_mapping.task[0].scaling_config[0].maximum_concurrency == 5 && aws_lambda_event_source_mapping.routed["ordered"].scaling_config[0].maximum_concurrency == 2
    error_message = "maximum concurrency per mapping"
  }
  assert {
    condition     = aws_sqs_queue.routed["ordered"].name == "wf-ordered.fifo" && aws_sqs_queue.routed["ordered"].content_based_deduplication
    error_message = "FIFO queues get .fifo and content-based deduplication"
  }
  assert {
    condition     = jsondecode(output.environment.WORKFLOW_QUEUES).ordered.fifo
    error_message = "WORKFLOW_QUEUES marks the FIFO queue"
  }
}

run "bad_limits_are_rejected" {
  command = plan
  variables {
    maximum_concurrency = 1
    batch_size          = 11
    list_shards         = 0
  }
  expect_failures = [var.maximum_concurrency, var.batch_size, var.list_shards]
}
