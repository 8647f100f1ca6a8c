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
  kms_key_id        = var.log_kms_key_arn
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
    variables = each.key == "sweeper" ? merge(local.environment, { CAIRN_METRICS_DEPLOYMENT = var.name, CAIRN_METRICS_NAMESPACE = local.metric_namespace }) : local.environment
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
  # The URL is public: cap how far anyone posting to it can scale the function.
  reserved_concurrent_executions = var.webhook_reserved_concurrency

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

# ---- Alarms and dashboard --------------------------------------------------
# Every alarm notifies alarm_sns_topic_arn (when set) on ALARM and OK, and
# treats missing data as not breaching: a quiet deployment is a healthy one.

locals {
  alarm_actions = var.alarm_sns_topic_arn == null ? [] : [var.alarm_sns_topic_arn]
  # Queue names as the worlds/aws module creates them.
  dlq_names = merge({ "" = "${var.name}-tasks-dlq" },
  { for k, q in var.queues : k => q.fifo ? "${var.name}-${k}-dlq.fifo" : "${var.name}-${k}-dlq" })
  task_queue_names = merge({ "" = "${var.name}-tasks" },
  { for k, q in var.queues : k => q.fifo ? "${var.name}-${k}.fifo" : "${var.name}-${k}" })
  function_names = { for k in keys(local.functions) : k => "${var.name}-${k}" }
  # The sweeper publishes this metric in an EMF log line after every sweep.
  metric_namespace = "cairn"
  alarms_on        = var.enable_alarms ? 1 : 0
}

resource "aws_cloudwatch_metric_alarm" "dead_letters" {
  for_each            = var.enable_alarms ? local.dlq_names : {}
  alarm_name          = "${var.name}-dead-letters${each.key == "" ? "" : "-${each.key}"}"
  alarm_description   = "Deliveries in ${each.value}: they failed max_receive_count times and their runs stopped advancing. See the dead-letter runbook in deploy/aws/README.md."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "oldest_message" {
  for_each            = var.enable_alarms ? local.task_queue_names : {}
  alarm_name          = "${var.name}-oldest-message${each.key == "" ? "" : "-${each.key}"}"
  alarm_description   = "The oldest message of ${each.value} has waited over ${var.oldest_message_alarm_seconds}s: the worker is failing, throttled or behind."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateAgeOfOldestMessage"
  dimensions          = { QueueName = each.value }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 2
  threshold           = var.oldest_message_alarm_seconds
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "function_errors" {
  for_each            = var.enable_alarms ? local.function_names : {}
  alarm_name          = "${each.value}-errors"
  alarm_description   = "${each.value} invocations failed (crashes, timeouts, a batch that failed whole). Its log group says why."
  namespace           = "AWS/Lambda"
  metric_name         = "Errors"
  dimensions          = { FunctionName = each.value }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "function_throttles" {
  for_each            = var.enable_alarms ? local.function_names : {}
  alarm_name          = "${each.value}-throttles"
  alarm_description   = "${each.value} invocations were throttled by its reserved concurrency or the account's limit. A throttled worker message counts as a receive toward the dead-letter queue; a throttled webhook answers 429."
  namespace           = "AWS/Lambda"
  metric_name         = "Throttles"
  dimensions          = { FunctionName = each.value }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "overdue" {
  count               = local.alarms_on
  alarm_name          = "${var.name}-overdue-deliveries"
  alarm_description   = "The sweeper sent again deliveries whose SQS message was gone (lost sends, messages dropped from a dead-letter queue). Now and then is recovery working; every sweep means messages keep being lost."
  namespace           = local.metric_namespace
  metric_name         = "ResentDeliveries"
  dimensions          = { Deployment = var.name }
  statistic           = "Sum"
  period              = 900
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
}

resource "aws_cloudwatch_metric_alarm" "scheduler" {
  for_each = var.enable_alarms ? {
    target_errors     = { metric = "TargetErrorCount", what = "Scheduler could not deliver to its target (the queue, or the sweeper)" }
    dropped           = { metric = "InvocationDroppedCount", what = "Scheduler dropped invocations after its retries: a delivery or a sweep did not happen" }
    throttled_targets = { metric = "InvocationThrottleCount", what = "Scheduler invocations were throttled" }
  } : {}
  alarm_name          = "${var.name}-scheduler-${replace(each.key, "_", "-")}"
  alarm_description   = "${each.value.what}. Schedules send deliveries due beyond 15 minutes and run the sweeper."
  namespace           = "AWS/Scheduler"
  metric_name         = each.value.metric
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
}

resource "aws_cloudwatch_dashboard" "this" {
  count          = local.alarms_on
  dashboard_name = var.name
  dashboard_body = jsonencode({
    widgets = [
      { type = "metric", width = 12, height = 6, properties = { title = "Dead-letter queues (messages)", region = module.workflow.region, stat = "Maximum", period = 300,
      metrics = [for q in values(local.dlq_names) : ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", q]] } },
      { type = "metric", width = 12, height = 6, properties = { title = "Oldest task message (s)", region = module.workflow.region, stat = "Maximum", period = 300,
      metrics = [for q in values(local.task_queue_names) : ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", q]] } },
      { type = "metric", width = 12, height = 6, properties = { title = "Function errors", region = module.workflow.region, stat = "Sum", period = 300,
      metrics = [for f in values(local.function_names) : ["AWS/Lambda", "Errors", "FunctionName", f]] } },
      { type = "metric", width = 12, height = 6, properties = { title = "Function throttles", region = module.workflow.region, stat = "Sum", period = 300,
      metrics = [for f in values(local.function_names) : ["AWS/Lambda", "Throttles", "FunctionName", f]] } },
      { type = "metric", width = 12, height = 6, properties = { title = "Sweeper: overdue and resent deliveries", region = module.workflow.region, stat = "Sum", period = 300,
      metrics = [[local.metric_namespace, "OverdueDeliveries", "Deployment", var.name], [local.metric_namespace, "ResentDeliveries", "Deployment", var.name]] } },
      { type = "metric", width = 12, height = 6, properties = { title = "Scheduler failures", region = module.workflow.region, stat = "Sum", period = 300,
      metrics = [for m in ["TargetErrorCount", "InvocationDroppedCount", "InvocationThrottleCount"] : ["AWS/Scheduler", m]] } },
    ]
  })
}
