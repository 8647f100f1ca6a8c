variable "function_name" {
  description = "Name of the Lambda function. Its execution role is <function_name>-role, its log group /aws/lambda/<function_name>, and the CloudFormation stack that holds it lambda-<function_name> (underscores become hyphens). Changing it replaces the function."
  type        = string
  default     = "durable-orders"
  nullable    = false
  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,59}$", var.function_name))
    error_message = "function_name must be 1 to 59 letters, digits, hyphens or underscores (Lambda allows 64; the role name adds \"-role\" within IAM's 64)."
  }
}

variable "region" {
  description = "AWS region; null uses the provider's default (AWS_REGION or the profile). The region must offer Lambda durable functions."
  type        = string
  default     = null
  validation {
    condition     = var.region == null ? true : can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", var.region))
    error_message = "region must be null or a region name such as us-east-2."
  }
}

variable "tags" {
  description = "Tags for every resource (provider default tags). The CloudFormation stack passes them on to the function."
  type        = map(string)
  default     = {}
  nullable    = false
  validation {
    condition = alltrue([for k, v in var.tags :
    length(k) >= 1 && length(k) <= 128 && !startswith(lower(k), "aws:") && length(v) <= 256])
    error_message = "tag keys must be 1 to 128 characters and not start with aws:, values at most 256 characters."
  }
}

variable "package_path" {
  description = "The deployment package: a zip holding the bootstrap executable built for provided.al2023 on arm64 (see the README's Build section). null uses durable-orders.zip in the directory above this root."
  type        = string
  default     = null
  validation {
    condition     = var.package_path == null ? true : endswith(var.package_path, ".zip")
    error_message = "package_path must be null or the path of a .zip file."
  }
}

variable "artifact_bucket" {
  description = "Existing S3 bucket, in the function's region, to upload the deployment package to. null creates a private bucket for it (emptied and deleted by terraform destroy)."
  type        = string
  default     = null
  validation {
    condition     = var.artifact_bucket == null ? true : can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.artifact_bucket))
    error_message = "artifact_bucket must be null or an S3 bucket name: 3 to 63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit."
  }
}

variable "execution_timeout_seconds" {
  description = "How long one durable execution may run in all, waits included, before Lambda stops it (DurableConfig.ExecutionTimeout). Not the timeout of one invocation: that is timeout_seconds."
  type        = number
  default     = 86400
  nullable    = false
  validation {
    condition     = var.execution_timeout_seconds >= 1 && var.execution_timeout_seconds <= 31622400 && floor(var.execution_timeout_seconds) == var.execution_timeout_seconds
    error_message = "execution_timeout_seconds must be a whole number of seconds within 1 to 31622400 (366 days)."
  }
}

variable "retention_period_days" {
  description = "Days Lambda keeps an execution's history after it ends (DurableConfig.RetentionPeriodInDays)."
  type        = number
  default     = 14
  nullable    = false
  validation {
    condition     = var.retention_period_days >= 1 && var.retention_period_days <= 90 && floor(var.retention_period_days) == var.retention_period_days
    error_message = "retention_period_days must be a whole number within 1 to 90."
  }
}

variable "timeout_seconds" {
  description = "Timeout of one invocation. An execution spans many invocations: each replays the recorded operations and runs until the workflow waits or ends."
  type        = number
  default     = 60
  nullable    = false
  validation {
    condition     = var.timeout_seconds >= 1 && var.timeout_seconds <= 900 && floor(var.timeout_seconds) == var.timeout_seconds
    error_message = "timeout_seconds must be a whole number within 1 to 900 (Lambda's limit)."
  }
}

variable "memory_mb" {
  description = "Memory of the function in MB."
  type        = number
  default     = 256
  nullable    = false
  validation {
    condition     = var.memory_mb >= 128 && var.memory_mb <= 10240 && floor(var.memory_mb) == var.memory_mb
    error_message = "memory_mb must be a whole number within 128 to 10240."
  }
}

variable "environment" {
  description = "Environment variables of the function, for example { COOLING_OFF = \"1m\" } to shorten the example's wait before charging (a Go duration; 30m without it)."
  type        = map(string)
  default     = {}
  nullable    = false
  validation {
    condition     = alltrue([for k in keys(var.environment) : can(regex("^[A-Za-z][A-Za-z0-9_]+$", k))])
    error_message = "environment variable names must start with a letter and hold at least two letters, digits or underscores."
  }
}

variable "invoke_function_arns" {
  description = "ARNs of the Lambda functions the workflow calls with durable.Invoke; the role may invoke each. An unqualified ARN also grants its versions and aliases (<arn>:*), since a durable function can only be invoked qualified. Empty grants no lambda:InvokeFunction."
  type        = list(string)
  default     = []
  nullable    = false
  validation {
    condition = alltrue([for a in var.invoke_function_arns :
    can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}(:(\\$LATEST|[A-Za-z0-9_-]+|\\*))?$", a))])
    error_message = "invoke_function_arns must hold Lambda function ARNs (arn:<partition>:lambda:<region>:<account>:function:<name>), optionally qualified by a version, an alias, $LATEST or *."
  }
}

variable "log_retention_days" {
  description = "Retention of the function's CloudWatch log group, in days; 0 keeps the logs forever."
  type        = number
  default     = 30
  nullable    = false
  validation {
    condition     = contains([0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be 0 or one of CloudWatch Logs' retention periods: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}
