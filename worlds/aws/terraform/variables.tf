variable "name" {
  description = "Prefix for every resource name."
  type        = string
  default     = "workflow"
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
  description = "Keep above the worker Lambda timeout."
  type        = number
  default     = 360
}

variable "message_retention_seconds" {
  description = "Queue and dead-letter retention (14 days)."
  type        = number
  default     = 1209600
}

variable "max_receive_count" {
  description = "Deliveries before a message moves to the dead-letter queue."
  type        = number
  default     = 10
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
}

variable "maximum_concurrency" {
  description = "Cap on concurrent worker invocations (2-1000)."
  type        = number
  default     = null
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
}

variable "enable_retention" {
  description = "Config.Retention is set: grant the worker dynamodb:BatchWriteItem to delete expired runs."
  type        = bool
  default     = false
}

variable "api_cancels_runs" {
  description = "The API cancels runs: grant it scheduler:DeleteSchedule (long timers) and, with retention, scheduler:CreateSchedule (a cancelled run schedules its expiry)."
  type        = bool
  default     = false
}
