variable "name" {
  description = "Prefix for every resource name: the table, queues, roles and the functions <name>-api, <name>-worker, <name>-webhook, <name>-sweeper."
  type        = string
  default     = "cairn"
  nullable    = false
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,40}$", var.name))
    error_message = "name must be 1 to 40 letters, digits, hyphens or underscores."
  }
}

variable "region" {
  description = "AWS region; null uses the provider's default (AWS_REGION or the profile)."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "lambda_dir" {
  description = "Directory holding api.zip, worker.zip, webhook.zip and sweeper.zip, each a bootstrap binary for provided.al2023 on arm64 (make lambda writes them to deploy/aws/build). null uses that directory."
  type        = string
  default     = null
}

variable "worker_timeout_seconds" {
  description = "Worker function timeout. The queues' visibility timeout must be at least six times this (AWS's recommendation for SQS event sources)."
  type        = number
  default     = 60
  nullable    = false
  validation {
    condition     = var.worker_timeout_seconds >= 3 && var.worker_timeout_seconds <= 900
    error_message = "worker_timeout_seconds must be within 3 to 900 (Lambda's limit)."
  }
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of the queues; null uses six times worker_timeout_seconds."
  type        = number
  default     = null
  validation {
    condition     = var.visibility_timeout_seconds == null ? true : var.visibility_timeout_seconds >= 6 * var.worker_timeout_seconds
    error_message = "visibility_timeout_seconds must be at least 6 x worker_timeout_seconds (AWS's recommendation for SQS event sources), or null to derive it."
  }
}

variable "api_timeout_seconds" {
  description = "Timeout of the API and webhook functions."
  type        = number
  default     = 30
  nullable    = false
  validation {
    condition     = var.api_timeout_seconds >= 3 && var.api_timeout_seconds <= 900
    error_message = "api_timeout_seconds must be within 3 to 900 (Lambda's limit)."
  }
}

variable "memory_mb" {
  description = "Memory of each function."
  type        = number
  default     = 256
  nullable    = false
  validation {
    condition     = var.memory_mb >= 128 && var.memory_mb <= 10240
    error_message = "memory_mb must be within 128 to 10240."
  }
}

variable "batch_size" {
  description = "Messages per worker invocation from the task queue."
  type        = number
  default     = 10
  nullable    = false
}

variable "maximum_concurrency" {
  description = "Cap on concurrent worker invocations from the task queue (2-1000); null leaves it to Lambda."
  type        = number
  default     = null
}

variable "worker_reserved_concurrency" {
  description = "Reserved concurrency of the worker; null reserves none. When set, every queue needs a maximum_concurrency and their sum must fit in it: otherwise the pollers invoke beyond it, and each throttled message counts as a receive toward the dead-letter queue."
  type        = number
  default     = null
  validation {
    condition     = var.worker_reserved_concurrency == null ? true : var.worker_reserved_concurrency >= 2
    error_message = "worker_reserved_concurrency must be null or at least 2 (the smallest maximum_concurrency)."
  }
  validation {
    condition = var.worker_reserved_concurrency == null ? true : (
      var.maximum_concurrency != null && alltrue([for q in values(var.queues) : q.maximum_concurrency != null]) &&
      sum(concat([coalesce(var.maximum_concurrency, 0)], [for q in values(var.queues) : coalesce(q.maximum_concurrency, 0)])) <= var.worker_reserved_concurrency
    )
    error_message = "with worker_reserved_concurrency set, maximum_concurrency and every queue's maximum_concurrency must be set, and their sum must not exceed worker_reserved_concurrency."
  }
}

variable "queues" {
  description = "Routed queues by name, as the worlds/aws module takes them: fifo, batch_size, maximum_concurrency, visibility_timeout_seconds, max_receive_count. The worker reads every one."
  type = map(object({
    fifo                       = optional(bool, false)
    batch_size                 = optional(number, 10)
    maximum_concurrency        = optional(number)
    visibility_timeout_seconds = optional(number)
    max_receive_count          = optional(number)
  }))
  default  = {}
  nullable = false
  validation {
    condition     = alltrue([for q in values(var.queues) : q.visibility_timeout_seconds == null ? true : q.visibility_timeout_seconds >= 6 * var.worker_timeout_seconds])
    error_message = "every queue's visibility_timeout_seconds must be null or at least 6 x worker_timeout_seconds."
  }
}

variable "retention" {
  description = "How long finished runs are kept, as a Go duration (\"720h\"); \"\" keeps them forever. The one retention setting: it reaches the functions as WORKFLOW_RETENTION and decides the grants."
  type        = string
  default     = ""
  nullable    = false
}

variable "enable_scheduler" {
  description = "EventBridge Scheduler for deliveries due more than 15 minutes ahead (sleeps, long retries, retention)."
  type        = bool
  default     = true
  nullable    = false
}

variable "list_shards" {
  description = "Shards of the listing index (WORKFLOW_LIST_SHARDS)."
  type        = number
  default     = 16
  nullable    = false
}

variable "webhook_base_url" {
  description = "Public base URL of the webhook endpoint, including /v1/workflow, when a custom domain fronts the webhook function (https://hooks.example.com/v1/workflow). null uses the webhook function's own URL."
  type        = string
  default     = null
  validation {
    condition     = var.webhook_base_url == null ? true : can(regex("^https://[^/]+(/.*)?/v1/workflow$", var.webhook_base_url))
    error_message = "webhook_base_url must be an https URL ending in /v1/workflow."
  }
}

variable "sweep_schedule" {
  description = "Scheduler expression for the sweeper, which sends again deliveries whose message is gone."
  type        = string
  default     = "rate(5 minutes)"
  nullable    = false
  validation {
    condition     = can(regex("^(rate|cron)\\(.+\\)$", var.sweep_schedule))
    error_message = "sweep_schedule must be a rate(...) or cron(...) expression."
  }
}

variable "log_retention_days" {
  description = "Retention of the functions' CloudWatch log groups, in days (one of CloudWatch Logs' values; 0 keeps logs forever)."
  type        = number
  default     = 30
  nullable    = false
  validation {
    condition     = contains([0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' retention values (0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, ...)."
  }
}

variable "deletion_protection" {
  description = "Table deletion protection; turn off for a trial you will destroy."
  type        = bool
  default     = true
  nullable    = false
}

variable "log_kms_key_arn" {
  description = "KMS key ARN encrypting the functions' log groups; null uses CloudWatch Logs' own encryption. The key policy must allow logs.<region>.amazonaws.com to use it."
  type        = string
  default     = null
}

variable "webhook_reserved_concurrency" {
  description = "Reserved concurrency of the public webhook function: the most requests it serves at once. Requests beyond it are throttled (HTTP 429) instead of scaling the function, and so its bill, with whoever posts to the URL; it also keeps the webhook from taking the account's concurrency from the worker. -1 reserves none (no cap)."
  type        = number
  default     = 10
  nullable    = false
  validation {
    condition     = var.webhook_reserved_concurrency == -1 || var.webhook_reserved_concurrency >= 1
    error_message = "webhook_reserved_concurrency must be -1 (no cap) or at least 1; 0 would refuse every webhook."
  }
}

variable "enable_alarms" {
  description = "CloudWatch alarms on the dead-letter queues, the task queue's oldest message, the functions' errors and throttles, the sweeper's overdue deliveries and Scheduler failures, and the dashboard."
  type        = bool
  default     = true
  nullable    = false
}

variable "alarm_sns_topic_arn" {
  description = "SNS topic every alarm notifies when it goes into and out of ALARM; null raises the alarms without notifying anyone."
  type        = string
  default     = null
  validation {
    condition     = var.alarm_sns_topic_arn == null ? true : can(regex("^arn:[^:]+:sns:", var.alarm_sns_topic_arn))
    error_message = "alarm_sns_topic_arn must be an SNS topic ARN or null."
  }
}

variable "oldest_message_alarm_seconds" {
  description = "Alarm when the oldest message of a task queue has waited longer than this: the worker is down, throttled or falling behind. Deliveries due later wait in the queue too (up to 15 minutes), so keep it above 900."
  type        = number
  default     = 1800
  nullable    = false
  validation {
    condition     = var.oldest_message_alarm_seconds >= 900
    error_message = "oldest_message_alarm_seconds must be at least 900: a delivery may wait 15 minutes in the queue by design."
  }
}
