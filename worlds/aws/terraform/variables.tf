variable "name" {
  description = "Prefix for every resource name."
  type        = string
  default     = "workflow"
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,40}$", var.name))
    error_message = "name must be 1 to 40 letters, digits, hyphens or underscores: it prefixes the table, queue, role and policy names."
  }
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "point_in_time_recovery" {
  description = "Table point-in-time recovery."
  type        = bool
  default     = true
}

variable "deletion_protection" {
  description = "Table deletion protection."
  type        = bool
  default     = true
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of the queues. AWS recommends at least six times the worker function timeout for an SQS event source."
  type        = number
  default     = 360
  validation {
    condition     = var.visibility_timeout_seconds >= 0 && var.visibility_timeout_seconds <= 43200
    error_message = "visibility_timeout_seconds must be within 0 to 43200 (12 hours), the SQS limits."
  }
}

variable "message_retention_seconds" {
  description = "Queue and dead-letter retention (14 days)."
  type        = number
  default     = 1209600
  validation {
    condition     = var.message_retention_seconds >= 3600 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds must be within 3600 (a message waits up to 15 minutes before it is due or sent again) and 1209600 (14 days, the SQS limit)."
  }
}

variable "max_receive_count" {
  description = "Deliveries before a message moves to the dead-letter queue."
  type        = number
  default     = 10
  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000
    error_message = "max_receive_count must be within 1 to 1000."
  }
}

variable "enable_scheduler" {
  description = "Create the schedule group and Scheduler role."
  type        = bool
  default     = true
}

variable "worker_function_name" {
  description = "Worker Lambda. Setting it creates the event source mapping."
  type        = string
  default     = null
}

variable "batch_size" {
  description = "Messages per worker invocation."
  type        = number
  default     = 10
  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= 10
    error_message = "batch_size must be within 1 to 10 (larger batches need a batching window, which the mappings do not set)."
  }
}

variable "maximum_concurrency" {
  description = "Cap on concurrent worker invocations (2-1000)."
  type        = number
  default     = null
  validation {
    condition     = coalesce(var.maximum_concurrency, 2) >= 2 && coalesce(var.maximum_concurrency, 2) <= 1000
    error_message = "maximum_concurrency must be null or within 2 to 1000, the event source mapping limits."
  }
}

variable "worker_role_name" {
  description = "Attach the worker policy to this role."
  type        = string
  default     = null
}

variable "api_role_name" {
  description = "Attach the API policy to this role."
  type        = string
  default     = null
}

variable "queues" {
  description = "Routed queues by name: fifo, batch_size (10), maximum_concurrency, visibility_timeout_seconds, max_receive_count. A FIFO queue gets the .fifo suffix and content-based deduplication."
  type = map(object({
    fifo                       = optional(bool, false)
    batch_size                 = optional(number, 10)
    maximum_concurrency        = optional(number)
    visibility_timeout_seconds = optional(number)
    max_receive_count          = optional(number)
  }))
  default = {}
  validation {
    condition     = alltrue([for k, q in var.queues : can(regex("^[A-Za-z0-9_-]{1,30}$", k))])
    error_message = "queue names must be 1 to 30 letters, digits, hyphens or underscores."
  }
  validation {
    condition = alltrue([for q in values(var.queues) : q.batch_size >= 1 && q.batch_size <= 10 &&
      coalesce(q.maximum_concurrency, 2) >= 2 && coalesce(q.maximum_concurrency, 2) <= 1000 &&
      coalesce(q.visibility_timeout_seconds, 0) >= 0 && coalesce(q.visibility_timeout_seconds, 0) <= 43200 &&
    coalesce(q.max_receive_count, 1) >= 1 && coalesce(q.max_receive_count, 1) <= 1000])
    error_message = "each queue needs batch_size 1 to 10, maximum_concurrency null or 2 to 1000, visibility_timeout_seconds 0 to 43200, max_receive_count 1 to 1000."
  }
}

variable "retention" {
  description = "How long finished runs are kept, as a Go duration (\"72h\", \"1h30m\"); \"\" or \"0s\" keeps them forever. Drives the WORKFLOW_RETENTION variable the functions read and the grants a retention needs: dynamodb:BatchWriteItem for the worker, and with the scheduler scheduler:CreateSchedule and iam:PassRole for the API (a cancelled run schedules its own expiry). Over 15 minutes needs enable_scheduler."
  type        = string
  default     = ""
  nullable    = false
  validation {
    condition     = can(regex("^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)?$", var.retention))
    error_message = "retention must be a Go duration of whole or decimal numbers with units ns, us, ms, s, m, h (for example \"72h\" or \"1h30m\"), or \"\" to keep runs forever."
  }
  validation {
    # Same arithmetic as local.retention_seconds: variables cannot read locals.
    condition     = var.enable_scheduler || sum(concat([0], [for m in regexall("([0-9]+(?:\\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", var.retention) : tonumber(m[0]) * { ns = 1e-9, us = 1e-6, "µs" = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600 }[m[1]]])) <= 900
    error_message = "retention over 15 minutes is delivered through EventBridge Scheduler: set enable_scheduler = true or a retention of at most 15m."
  }
}

variable "list_shards" {
  description = "Shards of the run and hook listing index (WORKFLOW_LIST_SHARDS). Every function of one table must use the same value."
  type        = number
  default     = 16
  nullable    = false
  validation {
    condition     = var.list_shards >= 1 && var.list_shards <= 256 && floor(var.list_shards) == var.list_shards
    error_message = "list_shards must be a whole number from 1 to 256."
  }
}
