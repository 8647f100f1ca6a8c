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
}

override_resource {
  target = aws_lambda_function_url.api
  values = { function_url = "https://api-id.lambda-url.eu-west-1.on.aws/" }
}

override_resource {
  target = aws_lambda_function_url.webhook
  values = { function_url = "https://hook-id.lambda-url.eu-west-1.on.aws/" }
}

variables {
  name       = "t"
  lambda_dir = "tests/lambda"
}

run "wiring" {
  command = apply

  assert {
    condition     = aws_lambda_function_url.api.authorization_type == "AWS_IAM" && aws_lambda_function_url.api.invoke_mode == "RESPONSE_STREAM"
    error_message = "the API URL must use AWS_IAM auth and RESPONSE_STREAM (lambdaurl streams its responses)"
  }
  assert {
    condition     = aws_lambda_function_url.webhook.authorization_type == "NONE" && aws_lambda_function_url.webhook.invoke_mode == "RESPONSE_STREAM"
    error_message = "the webhook URL must be public and RESPONSE_STREAM"
  }
  assert {
    condition     = aws_lambda_permission.webhook_url.function_url_auth_type == "NONE" && aws_lambda_permission.webhook_url.principal == "*" && aws_lambda_permission.webhook_invoke.action == "lambda:InvokeFunction"
    error_message = "a public function URL needs both InvokeFunctionUrl and InvokeFunction for everyone"
  }
  assert {
    condition = alltrue([for f in concat(values(aws_lambda_function.this), [aws_lambda_function.webhook]) :
    f.runtime == "provided.al2023" && f.architectures == tolist(["arm64"]) && f.handler == "bootstrap"])
    error_message = "every function runs bootstrap on provided.al2023 arm64"
  }
  assert {
    condition     = toset(keys(aws_lambda_function.this)) == toset(["api", "worker", "sweeper"]) && aws_lambda_function.webhook.function_name == "t-webhook"
    error_message = "four functions: api, worker, sweeper and webhook"
  }
  assert {
    condition = alltrue([for f in values(aws_lambda_function.this) :
    f.environment[0].variables.WORKFLOW_BASE_URL == "https://hook-id.lambda-url.eu-west-1.on.aws/v1/workflow"])
    error_message = "api, worker and sweeper build webhook URLs on the webhook function's URL"
  }
  assert {
    condition     = !contains(keys(aws_lambda_function.webhook.environment[0].variables), "WORKFLOW_BASE_URL")
    error_message = "the webhook function cannot know its own URL without a custom domain"
  }
  assert {
    condition = alltrue([for f in concat(values(aws_lambda_function.this), [aws_lambda_function.webhook]) :
      f.environment[0].variables.WORKFLOW_TABLE == "t" && f.environment[0].variables.WORKFLOW_RETENTION == "0s" &&
    f.environment[0].variables.WORKFLOW_LIST_SHARDS == "16" && startswith(f.environment[0].variables.WORKFLOW_SCHEDULER_ROLE_ARN, "arn:")])
    error_message = "every function gets the module's environment"
  }
  assert {
    condition     = output.api_url == "https://api-id.lambda-url.eu-west-1.on.aws/v1/workflow" && output.webhook_base_url == "https://hook-id.lambda-url.eu-west-1.on.aws/v1/workflow"
    error_message = "api_url and webhook_base_url outputs"
  }
  assert {
    condition     = strcontains(output.cli_env, "export CAIRN_URL='https://api-id.lambda-url.eu-west-1.on.aws/v1/workflow'") && strcontains(output.cli_env, "export AWS_REGION='eu-west-1'") && strcontains(output.cli_env, "export WORKFLOW_TABLE='t'")
    error_message = "cli_env exports what the CLI reads"
  }
  assert {
    condition     = output.event_source_mappings[""].function_name == "t-worker" && output.event_source_mappings[""].function_response_types == toset(["ReportBatchItemFailures"]) && output.event_source_mappings[""].event_source_arn == module.workflow.queue_arn
    error_message = "the worker is triggered by the task queue with ReportBatchItemFailures"
  }
  assert {
    condition     = aws_lambda_function.this["worker"].timeout == 60 && aws_lambda_function.this["worker"].reserved_concurrent_executions == -1
    error_message = "worker timeout and no reserved concurrency by default"
  }
  assert {
    condition     = aws_iam_role_policy_attachment.webhook.policy_arn == module.workflow.api_policy_arn && aws_iam_role_policy_attachment.sweeper.policy_arn == module.workflow.worker_policy_arn
    error_message = "the webhook function gets the API policy, the sweeper the worker policy"
  }
  assert {
    condition     = aws_scheduler_schedule.sweep.schedule_expression == "rate(5 minutes)" && aws_scheduler_schedule.sweep.target[0].arn == aws_lambda_function.this["sweeper"].arn && aws_scheduler_schedule.sweep.target[0].role_arn == aws_iam_role.sweep_schedule.arn
    error_message = "the sweeper runs on a Scheduler cron"
  }
  assert {
    condition     = contains(flatten([for s in data.aws_iam_policy_document.invoke_sweeper.statement : s.actions]), "lambda:InvokeFunction")
    error_message = "the sweep schedule's role may invoke the sweeper"
  }
}

run "routed_queues_get_triggers" {
  command = apply
  variables {
    maximum_concurrency         = 4
    worker_reserved_concurrency = 10
    queues = {
      heavy   = { maximum_concurrency = 4 }
      ordered = { fifo = true, maximum_concurrency = 2 }
    }
    retention = "720h"
  }

  assert {
    condition     = toset(keys(output.event_source_mappings)) == toset(["", "heavy", "ordered"]) && alltrue([for m in values(output.event_source_mappings) : m.function_name == "t-worker" && m.function_response_types == toset(["ReportBatchItemFailures"])])
    error_message = "every queue triggers the worker"
  }
  assert {
    condition     = aws_lambda_function.this["worker"].reserved_concurrent_executions == 10
    error_message = "reserved concurrency reaches the worker"
  }
  assert {
    condition     = aws_lambda_function.this["worker"].environment[0].variables.WORKFLOW_RETENTION == "720h"
    error_message = "the one retention setting reaches the functions"
  }
}

run "custom_webhook_domain" {
  command = plan
  variables {
    webhook_base_url = "https://hooks.example.com/v1/workflow"
  }

  assert {
    condition     = aws_lambda_function.this["worker"].environment[0].variables.WORKFLOW_BASE_URL == "https://hooks.example.com/v1/workflow" && aws_lambda_function.webhook.environment[0].variables.WORKFLOW_BASE_URL == "https://hooks.example.com/v1/workflow"
    error_message = "a custom domain is every function's WORKFLOW_BASE_URL"
  }
}

run "visibility_below_six_timeouts" {
  command = plan
  variables {
    worker_timeout_seconds     = 120
    visibility_timeout_seconds = 600
  }
  expect_failures = [var.visibility_timeout_seconds]
}

run "queue_visibility_below_six_timeouts" {
  command = plan
  variables {
    queues = { heavy = { visibility_timeout_seconds = 300 } }
  }
  expect_failures = [var.queues]
}

run "concurrency_beyond_reservation" {
  command = plan
  variables {
    worker_reserved_concurrency = 10
    maximum_concurrency         = 8
    queues                      = { heavy = { maximum_concurrency = 4 } }
  }
  expect_failures = [var.worker_reserved_concurrency]
}

run "reservation_without_maximum_concurrency" {
  command = plan
  variables {
    worker_reserved_concurrency = 10
  }
  expect_failures = [var.worker_reserved_concurrency]
}

run "missing_archives" {
  command = plan
  variables {
    lambda_dir = "tests/no-such-dir"
  }
  # The other functions wait for the webhook URL, so the webhook function fails first.
  expect_failures = [aws_lambda_function.webhook]
}

run "alarms_on_by_default" {
  command = apply
  variables {
    queues = { heavy = {}, ordered = { fifo = true } }
  }

  assert {
    condition     = toset([for a in values(aws_cloudwatch_metric_alarm.dead_letters) : a.dimensions.QueueName]) == toset(["t-tasks-dlq", "t-heavy-dlq", "t-ordered-dlq.fifo"]) && alltrue([for a in values(aws_cloudwatch_metric_alarm.dead_letters) : a.metric_name == "ApproximateNumberOfMessagesVisible" && a.threshold == 0 && a.comparison_operator == "GreaterThanThreshold"])
    error_message = "every dead-letter queue alarms on depth > 0"
  }
  assert {
    condition     = toset([for a in values(aws_cloudwatch_metric_alarm.oldest_message) : a.dimensions.QueueName]) == toset(["t-tasks", "t-heavy", "t-ordered.fifo"]) && alltrue([for a in values(aws_cloudwatch_metric_alarm.oldest_message) : a.metric_name == "ApproximateAgeOfOldestMessage" && a.threshold == 1800])
    error_message = "every task queue alarms on the age of its oldest message"
  }
  assert {
    condition     = toset(keys(aws_cloudwatch_metric_alarm.function_errors)) == toset(["api", "webhook", "worker", "sweeper"]) && toset(keys(aws_cloudwatch_metric_alarm.function_throttles)) == toset(["api", "webhook", "worker", "sweeper"]) && alltrue([for a in values(aws_cloudwatch_metric_alarm.function_errors) : a.namespace == "AWS/Lambda" && a.metric_name == "Errors"]) && alltrue([for a in values(aws_cloudwatch_metric_alarm.function_throttles) : a.metric_name == "Throttles"]) && aws_cloudwatch_metric_alarm.function_throttles["webhook"].dimensions.FunctionName == "t-webhook"
    error_message = "every function alarms on errors and throttles"
  }
  assert {
    condition     = aws_cloudwatch_metric_alarm.overdue[0].namespace == "cairn" && aws_cloudwatch_metric_alarm.overdue[0].metric_name == "ResentDeliveries" && aws_cloudwatch_metric_alarm.overdue[0].dimensions.Deployment == "t" && aws_lambda_function.this["sweeper"].environment[0].variables.CAIRN_METRICS_DEPLOYMENT == "t" && aws_lambda_function.this["sweeper"].environment[0].variables.CAIRN_METRICS_NAMESPACE == "cairn"
    error_message = "the overdue alarm watches the metric the sweeper publishes, under the names the sweeper is given"
  }
  assert {
    condition     = toset([for a in values(aws_cloudwatch_metric_alarm.scheduler) : a.metric_name]) == toset(["TargetErrorCount", "InvocationDroppedCount", "InvocationThrottleCount"]) && alltrue([for a in values(aws_cloudwatch_metric_alarm.scheduler) : a.namespace == "AWS/Scheduler"])
    error_message = "Scheduler failures alarm"
  }
  assert {
    condition     = alltrue([for a in concat(values(aws_cloudwatch_metric_alarm.dead_letters), values(aws_cloudwatch_metric_alarm.function_errors)) : length(a.alarm_actions) == 0 && a.treat_missing_data == "notBreaching"])
    error_message = "without a topic the alarms notify nobody, and a quiet deployment is not in alarm"
  }
  assert {
    condition     = length(aws_cloudwatch_dashboard.this) == 1 && strcontains(aws_cloudwatch_dashboard.this[0].dashboard_body, "ApproximateAgeOfOldestMessage") && strcontains(aws_cloudwatch_dashboard.this[0].dashboard_body, "ResentDeliveries")
    error_message = "the dashboard shows the alarmed metrics"
  }
  assert {
    condition     = aws_lambda_function.webhook.reserved_concurrent_executions == 10
    error_message = "the public webhook's concurrency is capped by default"
  }
  assert {
    condition     = alltrue([for g in values(aws_cloudwatch_log_group.this) : g.retention_in_days == 30 && g.kms_key_id == null])
    error_message = "log groups keep 30 days, without a KMS key by default"
  }
}

run "alarm_topic_log_key_and_webhook_cap" {
  command = plan
  variables {
    alarm_sns_topic_arn          = "arn:aws:sns:eu-west-1:123456789012:ops"
    log_kms_key_arn              = "arn:aws:kms:eu-west-1:123456789012:key/abc"
    log_retention_days           = 90
    webhook_reserved_concurrency = -1
    oldest_message_alarm_seconds = 3600
  }

  assert {
    condition     = alltrue([for a in concat(values(aws_cloudwatch_metric_alarm.dead_letters), values(aws_cloudwatch_metric_alarm.function_throttles), values(aws_cloudwatch_metric_alarm.scheduler), aws_cloudwatch_metric_alarm.overdue) : a.alarm_actions == toset(["arn:aws:sns:eu-west-1:123456789012:ops"]) && a.ok_actions == toset(["arn:aws:sns:eu-west-1:123456789012:ops"])])
    error_message = "every alarm notifies the topic on ALARM and OK"
  }
  assert {
    condition     = alltrue([for g in values(aws_cloudwatch_log_group.this) : g.retention_in_days == 90 && g.kms_key_id == "arn:aws:kms:eu-west-1:123456789012:key/abc"])
    error_message = "log retention and KMS key reach every log group"
  }
  assert {
    condition     = aws_lambda_function.webhook.reserved_concurrent_executions == -1 && aws_cloudwatch_metric_alarm.oldest_message[""].threshold == 3600
    error_message = "the webhook cap can be lifted, and the oldest-message threshold set"
  }
}

run "alarms_off" {
  command = plan
  variables {
    enable_alarms = false
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.dead_letters) == 0 && length(aws_cloudwatch_metric_alarm.function_errors) == 0 && length(aws_cloudwatch_metric_alarm.overdue) == 0 && length(aws_cloudwatch_dashboard.this) == 0
    error_message = "enable_alarms = false creates no alarms and no dashboard"
  }
}

run "bad_ops_variables" {
  command = plan
  variables {
    webhook_reserved_concurrency = 0
    alarm_sns_topic_arn          = "ops-topic"
    log_retention_days           = 10
    oldest_message_alarm_seconds = 60
  }
  expect_failures = [var.webhook_reserved_concurrency, var.alarm_sns_topic_arn, var.log_retention_days, var.oldest_message_alarm_seconds]
}
