output "api_url" {
  description = "The RPC endpoint's base URL (CAIRN_URL for the cairn CLI): the api function's URL with /v1/workflow. AWS_IAM auth: requests are SigV4-signed for the lambda service."
  value       = local.api_url
}

output "webhook_base_url" {
  description = "Base URL of the public webhook endpoint (WORKFLOW_BASE_URL): a hook's URL is <webhook_base_url>/webhooks/<token>."
  value       = local.webhook_base_url
}

output "region" {
  description = "Region of every resource (AWS_REGION for the CLI)."
  value       = module.workflow.region
}

output "table_name" {
  description = "DynamoDB table (WORKFLOW_TABLE)."
  value       = module.workflow.table_name
}

output "queue_url" {
  description = "Task queue URL (WORKFLOW_QUEUE_URL)."
  value       = module.workflow.queue_url
}

output "queues" {
  description = "Routed queues by name: url, arn, fifo."
  value       = module.workflow.queues
}

output "dead_letter_queue_url" {
  description = "Task dead-letter queue URL (cairn redrive --dlq)."
  value       = module.workflow.dead_letter_queue_url
}

output "dead_letter_queues" {
  description = "Dead-letter queues of the routed queues by name: url, arn."
  value       = module.workflow.dead_letter_queues
}

output "scheduler_group" {
  description = "Schedule group of the one-time delivery schedules, null without the scheduler."
  value       = module.workflow.scheduler_group
}

output "functions" {
  description = "Function names by role: api, webhook, worker, sweeper."
  value       = merge({ for k, f in aws_lambda_function.this : k => f.function_name }, { webhook = aws_lambda_function.webhook.function_name })
}

output "environment" {
  description = "The environment of the api, worker and sweeper functions (awsworld.ConfigFromEnv)."
  value       = local.environment
}

output "event_source_mappings" {
  description = "The worker's SQS triggers by queue (\"\" for the task queue)."
  value       = module.workflow.event_source_mappings
}

output "cli_env" {
  description = "Shell exports for the cairn CLI: eval \"$(terraform output -raw cli_env)\"."
  value = join("", [for k, v in merge(local.environment, {
    AWS_REGION = module.workflow.region
    CAIRN_URL  = local.api_url
  }) : "export ${k}='${v}'\n"])
}
