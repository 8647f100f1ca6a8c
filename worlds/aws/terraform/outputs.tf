output "table_name" {
  description = "DynamoDB table (Config.TableName)."
  value       = aws_dynamodb_table.this.name
}

output "table_arn" {
  description = "DynamoDB table ARN."
  value       = aws_dynamodb_table.this.arn
}

output "queue_url" {
  description = "Task queue URL (Config.QueueURL)."
  value       = aws_sqs_queue.task.url
}

output "queue_arn" {
  description = "Task queue ARN (SchedulerConfig.TargetARN)."
  value       = aws_sqs_queue.task.arn
}

output "dead_letter_queue_arn" {
  description = "Task dead-letter queue ARN."
  value       = aws_sqs_queue.task_dlq.arn
}

output "dead_letter_queue_url" {
  description = "Task dead-letter queue URL (cairn redrive)."
  value       = aws_sqs_queue.task_dlq.url
}

output "dead_letter_queues" {
  description = "Dead-letter queues of the routed queues by name: url, arn."
  value       = { for k, q in aws_sqs_queue.routed_dlq : k => { url = q.url, arn = q.arn } }
}

output "region" {
  description = "Region of the table and queues."
  value       = data.aws_region.current.name
}

output "retention" {
  description = "How long finished runs are kept (WORKFLOW_RETENTION); \"0s\" keeps them forever."
  value       = local.retain ? var.retention : "0s"
}

output "queues" {
  description = "Routed queues by name (Config.Queues)."
  value       = { for k, q in aws_sqs_queue.routed : k => { url = q.url, arn = q.arn, fifo = var.queues[k].fifo } }
}

output "scheduler_group" {
  description = "Schedule group (SchedulerConfig.Group), null without the scheduler."
  value       = local.scheduler_group
}

output "scheduler_role_arn" {
  description = "Role Scheduler assumes (SchedulerConfig.RoleARN), null without the scheduler."
  value       = var.enable_scheduler ? aws_iam_role.scheduler[0].arn : null
}

output "worker_policy_arn" {
  description = "Managed policy for the worker role."
  value       = aws_iam_policy.worker.arn
}

output "api_policy_arn" {
  description = "Managed policy for the API role."
  value       = aws_iam_policy.api.arn
}

output "environment" {
  description = "Environment variables for every function of the World (awsworld.ConfigFromEnv). WORKFLOW_BASE_URL is not among them: it is the public URL of the webhook endpoint, which the module does not create."
  value = merge(
    {
      WORKFLOW_TABLE       = aws_dynamodb_table.this.name
      WORKFLOW_QUEUE_URL   = aws_sqs_queue.task.url
      WORKFLOW_QUEUE_ARN   = aws_sqs_queue.task.arn
      WORKFLOW_QUEUES      = jsonencode({ for k, q in aws_sqs_queue.routed : k => { url = q.url, arn = q.arn, fifo = var.queues[k].fifo } })
      WORKFLOW_RETENTION   = local.retain ? var.retention : "0s"
      WORKFLOW_LIST_SHARDS = tostring(var.list_shards)
      # How long Sweep waits before sending again a delivery lost with its dead-letter message.
      WORKFLOW_DEAD_LETTER_RETENTION = "${var.message_retention_seconds}s"
    },
    var.enable_scheduler ? {
      WORKFLOW_SCHEDULER_GROUP    = local.scheduler_group
      WORKFLOW_SCHEDULER_ROLE_ARN = aws_iam_role.scheduler[0].arn
    } : {},
  )
}

output "event_source_mappings" {
  description = "The worker's SQS triggers by queue (\"\" for the task queue): event_source_arn, function_name, batch_size, maximum_concurrency, function_response_types."
  value = merge(
    { for m in aws_lambda_event_source_mapping.task : "" => {
      event_source_arn        = m.event_source_arn
      function_name           = m.function_name
      batch_size              = m.batch_size
      maximum_concurrency     = var.maximum_concurrency
      function_response_types = m.function_response_types
    } },
    { for k, m in aws_lambda_event_source_mapping.routed : k => {
      event_source_arn        = m.event_source_arn
      function_name           = m.function_name
      batch_size              = m.batch_size
      maximum_concurrency     = var.queues[k].maximum_concurrency
      function_response_types = m.function_response_types
    } },
  )
}
