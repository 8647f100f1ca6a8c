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
  description = "Environment variables for the worker and API functions."
  value = merge(
    {
      WORKFLOW_TABLE     = aws_dynamodb_table.this.name
      WORKFLOW_QUEUE_URL = aws_sqs_queue.task.url
      WORKFLOW_QUEUES    = jsonencode({ for k, q in aws_sqs_queue.routed : k => { url = q.url, arn = q.arn, fifo = var.queues[k].fifo } })
    },
    var.enable_scheduler ? {
      WORKFLOW_QUEUE_ARN          = aws_sqs_queue.task.arn
      WORKFLOW_SCHEDULER_GROUP    = local.scheduler_group
      WORKFLOW_SCHEDULER_ROLE_ARN = aws_iam_role.scheduler[0].arn
    } : {},
  )
}
