# A complete deployment of the AWS World: the worlds/aws module (table, queues,
# Scheduler, policies) and four Lambda functions on provided.al2023 arm64.
#
#   api      Function URL, AWS_IAM auth: the RPC the cairn CLI signs requests to.
#   webhook  Function URL, no auth: POST /v1/workflow/webhooks/{token} only.
#   worker   SQS triggers on every queue: runs the workflows.
#   sweeper  Scheduler cron: sends again deliveries whose message is gone.
#
# Both URLs use RESPONSE_STREAM: the functions serve net/http handlers through
# aws-lambda-go's lambdaurl, which answers with a streamed response; in BUFFERED
# mode every request fails.

locals {
  lambda_dir = coalesce(var.lambda_dir, "${path.module}/build")
  functions = {
    api     = { timeout = var.api_timeout_seconds }
    webhook = { timeout = var.api_timeout_seconds }
    worker  = { timeout = var.worker_timeout_seconds }
    sweeper = { timeout = var.api_timeout_seconds }
  }
  packages = { for f in keys(local.functions) : f => "${local.lambda_dir}/${f}.zip" }

  # No cycle: the webhook function does not need its own URL, the others read it.
  webhook_base_url = coalesce(var.webhook_base_url, "${trimsuffix(aws_lambda_function_url.webhook.function_url, "/")}/v1/workflow")
  api_url          = "${trimsuffix(aws_lambda_function_url.api.function_url, "/")}/v1/workflow"
  environment      = merge(module.workflow.environment, { WORKFLOW_BASE_URL = local.webhook_base_url })
  # The webhook function builds no webhook URLs; a custom domain is known in advance.
  webhook_environment = var.webhook_base_url == null ? module.workflow.environment : merge(module.workflow.environment, { WORKFLOW_BASE_URL = var.webhook_base_url })
}

module "workflow" {
  source = "../../worlds/aws/terraform"

  name                       = var.name
  tags                       = var.tags
  deletion_protection        = var.deletion_protection
  enable_scheduler           = var.enable_scheduler
  retention                  = var.retention
  list_shards                = var.list_shards
  visibility_timeout_seconds = coalesce(var.visibility_timeout_seconds, 6 * var.worker_timeout_seconds)
  batch_size                 = var.batch_size
  maximum_concurrency        = var.maximum_concurrency
  queues                     = var.queues
  # The module creates the SQS triggers (ReportBatchItemFailures) after it has
  # attached its worker policy to this role.
  worker_function_name = aws_lambda_function.this["worker"].function_name
  worker_role_name     = aws_iam_role.this["worker"].name
  api_role_name        = aws_iam_role.this["api"].name
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

# One execution role per function. The module attaches its worker and API
# policies to the worker and api roles; the webhook function needs what the API
# needs to resume a hook, the sweeper what the worker needs to send deliveries.
resource "aws_iam_role" "this" {
  for_each           = local.functions
  name               = "${var.name}-${each.key}"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy_attachment" "logs" {
  for_each   = local.functions
  role       = aws_iam_role.this[each.key].name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
}

resource "aws_iam_role_policy_attachment" "webhook" {
  role       = aws_iam_role.this["webhook"].name
  policy_arn = module.workflow.api_policy_arn
}

resource "aws_iam_role_policy_attachment" "sweeper" {
  role       = aws_iam_role.this["sweeper"].name
  policy_arn = module.workflow.worker_policy_arn
}

data "aws_partition" "current" {}

resource "aws_cloudwatch_log_group" "this" {
  for_each          = local.functions
  name              = "/aws/lambda/${var.name}-${each.key}"
  retention_in_days = var.log_retention_days
}

# The api, worker and sweeper functions read the webhook function's URL, so the
# webhook function is a resource of its own: one for_each resource is one node of
# the dependency graph, and reading its own URL would be a cycle.
resource "aws_lambda_function" "this" {
  for_each         = { for k, f in local.functions : k => f if k != "webhook" }
  function_name    = "${var.name}-${each.key}"
  role             = aws_iam_role.this[each.key].arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  filename         = local.packages[each.key]
  source_code_hash = fileexists(local.packages[each.key]) ? filebase64sha256(local.packages[each.key]) : null
  timeout          = each.value.timeout
  memory_size      = var.memory_mb
  # -1 is Lambda's "no reservation".
  reserved_concurrent_executions = each.key == "worker" ? coalesce(var.worker_reserved_concurrency, -1) : -1

  environment {
    variables = local.environment
  }

  lifecycle {
    precondition {
      condition     = fileexists(local.packages[each.key])
      error_message = "No ${local.packages[each.key]}: run `make lambda` first (or point lambda_dir at the zips)."
    }
  }

  depends_on = [aws_iam_role_policy_attachment.logs, aws_cloudwatch_log_group.this]
}

resource "aws_lambda_function" "webhook" {
  function_name    = "${var.name}-webhook"
  role             = aws_iam_role.this["webhook"].arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  filename         = local.packages["webhook"]
  source_code_hash = fileexists(local.packages["webhook"]) ? filebase64sha256(local.packages["webhook"]) : null
  timeout          = local.functions["webhook"].timeout
  memory_size      = var.memory_mb

  environment {
    variables = local.webhook_environment
  }

  lifecycle {
    precondition {
      condition     = fileexists(local.packages["webhook"])
      error_message = "No ${local.packages["webhook"]}: run `make lambda` first (or point lambda_dir at the zips)."
    }
  }

  depends_on = [aws_iam_role_policy_attachment.logs, aws_cloudwatch_log_group.this]
}

resource "aws_lambda_function_url" "api" {
  function_name      = aws_lambda_function.this["api"].function_name
  authorization_type = "AWS_IAM"
  invoke_mode        = "RESPONSE_STREAM"
}

resource "aws_lambda_function_url" "webhook" {
  function_name      = aws_lambda_function.webhook.function_name
  authorization_type = "NONE"
  invoke_mode        = "RESPONSE_STREAM"
}

# A public URL needs both statements (new function URLs since October 2025). The
# webhook function serves only the webhook route, so invoking it any other way
# reaches nothing more than the URL does.
resource "aws_lambda_permission" "webhook_url" {
  statement_id           = "PublicFunctionURL"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.webhook.function_name
  principal              = "*"
  function_url_auth_type = "NONE"
}

resource "aws_lambda_permission" "webhook_invoke" {
  statement_id  = "PublicFunctionURLInvoke"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.webhook.function_name
  principal     = "*"
}

# The sweeper on a Scheduler cron.
data "aws_iam_policy_document" "scheduler_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "invoke_sweeper" {
  statement {
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.this["sweeper"].arn]
  }
}

resource "aws_iam_role" "sweep_schedule" {
  name               = "${var.name}-sweep-schedule"
  assume_role_policy = data.aws_iam_policy_document.scheduler_assume.json
}

resource "aws_iam_role_policy" "sweep_schedule" {
  name   = "invoke-sweeper"
  role   = aws_iam_role.sweep_schedule.id
  policy = data.aws_iam_policy_document.invoke_sweeper.json
}

resource "aws_scheduler_schedule" "sweep" {
  name                = "${var.name}-sweep"
  schedule_expression = var.sweep_schedule
  flexible_time_window {
    mode = "OFF"
  }
  target {
    arn      = aws_lambda_function.this["sweeper"].arn
    role_arn = aws_iam_role.sweep_schedule.arn
    input    = "{}"
    retry_policy {
      maximum_retry_attempts = 0 # the next sweep comes soon enough
    }
  }
  depends_on = [aws_iam_role_policy.sweep_schedule]
}
