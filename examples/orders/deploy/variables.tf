variable "name" {
  description = "Prefix of every resource's name; the intake function reads it to route its queues."
  type        = string
  default     = "orders"
  validation {
    condition     = can(regex("^[a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 1 to 30 lowercase letters, digits and hyphens."
  }
}

variable "region" {
  description = "AWS region; null uses the shell's (AWS_REGION or the profile)."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags on every resource."
  type        = map(string)
  default     = {}
}

variable "lambda_dir" {
  description = "Folder holding worker.zip and intake.zip (see the README's build step)."
  type        = string
  default     = null
}

variable "deletion_protection" {
  description = "Protect the workflow table from deletion; false lets terraform destroy remove it."
  type        = bool
  default     = true
}
