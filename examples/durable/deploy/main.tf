# The examples/durable function, deployed as a Lambda durable function:
# provided.al2023 on arm64, handler bootstrap, with a durable configuration.
#
# hashicorp/aws 5.x has no durable_config on aws_lambda_function, so the
# function itself is an AWS::Lambda::Function in a CloudFormation stack, whose
# DurableConfig property CloudFormation supports. Everything around it is plain
# Terraform: the execution role and its policies, the log group, and the
# deployment package in S3 (CloudFormation takes a compiled binary's zip only
# from S3).
#
# Durability is fixed when a function is created: Lambda cannot turn an existing
# function into a durable one. This root creates the function durable from the
# start. Changing execution_timeout_seconds or retention_period_days later is
# an in-place update (CloudFormation: "Update requires: No interruption");
# changing function_name replaces the function.

data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  package = coalesce(var.package_path, "${path.module}/../durable-orders.zip")
  # The key names the package by its content: new code is a new object, hence
  # a new template, and CloudFormation updates the function's code. Guarded so
  # that a missing zip reaches the precondition below instead of an error here.
  package_sha256 = fileexists(local.package) ? filesha256(local.package) : "missing"

  bucket = var.artifact_bucket != null ? var.artifact_bucket : aws_s3_bucket.artifacts[0].id

  # Lambda authorizes the checkpoint calls against the execution's ARN,
  # <function ARN>:<version>/durable-execution/<name>/<id>, which only the
  # qualified pattern <function ARN>:* matches: a policy naming only the
  # unqualified ARN is denied. The unqualified ARN is listed as well; it matches
  # no execution, so it grants nothing more.
  function_arn = "arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.function_name}"

  # An unqualified ARN allows unqualified invocations only; durable functions
  # are invoked by version, alias or $LATEST, so add <arn>:* for each.
  invoke_resources = distinct(flatten([for a in var.invoke_function_arns :
  can(regex(":function:[^:]+$", a)) ? [a, "${a}:*"] : [a]]))

  statements = concat(
    [{
      Sid      = "DurableExecutionCheckpoints"
      Effect   = "Allow"
      Action   = ["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"]
      Resource = ["${local.function_arn}:*", local.function_arn]
    }],
    length(local.invoke_resources) == 0 ? [] : [{
      Sid      = "DurableInvoke"
      Effect   = "Allow"
      Action   = ["lambda:InvokeFunction"]
      Resource = local.invoke_resources
    }],
  )

  template = {
    AWSTemplateFormatVersion = "2010-09-09"
    Description              = "Lambda durable function ${var.function_name}, managed by Terraform"
    Resources = {
      Function = {
        Type = "AWS::Lambda::Function"
        Properties = {
          FunctionName  = var.function_name
          Role          = aws_iam_role.function.arn
          Runtime       = "provided.al2023"
          Architectures = ["arm64"]
          Handler       = "bootstrap"
          Timeout       = var.timeout_seconds
          MemorySize    = var.memory_mb
          # S3ObjectVersion pins the object in a versioned bucket; unversioned
          # buckets report no version.
          Code = merge(
            { S3Bucket = aws_s3_object.package.bucket, S3Key = aws_s3_object.package.key },
            { for k, v in { S3ObjectVersion = aws_s3_object.package.version_id } : k => v if v != null && v != "" },
          )
          DurableConfig = {
            ExecutionTimeout      = var.execution_timeout_seconds
            RetentionPeriodInDays = var.retention_period_days
          }
          Environment = { Variables = var.environment }
        }
      }
    }
    Outputs = {
      FunctionName = { Value = { Ref = "Function" } }
      FunctionArn  = { Value = { "Fn::GetAtt" = ["Function", "Arn"] } }
    }
  }
}

# The deployment package.

resource "aws_s3_bucket" "artifacts" {
  count         = var.artifact_bucket == null ? 1 : 0
  bucket_prefix = "code-${substr(lower(replace(var.function_name, "_", "-")), 0, 24)}-"
  # It holds nothing but deployment packages, which Lambda has copied.
  force_destroy = true
}

resource "aws_s3_bucket_public_access_block" "artifacts" {
  count                   = var.artifact_bucket == null ? 1 : 0
  bucket                  = aws_s3_bucket.artifacts[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_object" "package" {
  bucket      = local.bucket
  key         = "${var.function_name}/${local.package_sha256}.zip"
  source      = local.package
  source_hash = local.package_sha256

  lifecycle {
    # The previous package stays until the stack has moved to the new one, so
    # a failed stack update can still roll back to it.
    create_before_destroy = true
    precondition {
      condition     = fileexists(local.package)
      error_message = "No ${local.package}: build bootstrap and zip it into durable-orders.zip first (README, Build), or point package_path at the zip."
    }
  }
}

# The execution role.

resource "aws_iam_role" "function" {
  name = "${var.function_name}-role"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_iam_role_policy_attachment" "logs" {
  role       = aws_iam_role.function.name
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
}

resource "aws_iam_role_policy" "durable" {
  name   = "durable-execution"
  role   = aws_iam_role.function.id
  policy = jsonencode({ Version = "2012-10-17", Statement = local.statements })
}

resource "aws_cloudwatch_log_group" "function" {
  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = var.log_retention_days
}

# The function.

resource "aws_cloudformation_stack" "function" {
  name          = "lambda-${replace(var.function_name, "_", "-")}"
  template_body = jsonencode(local.template)
  # A failed creation deletes the stack, so the next apply starts clean
  # instead of finding a stack in ROLLBACK_COMPLETE.
  on_failure = "DELETE"

  # The role's grants and the log group exist before the first invocation.
  depends_on = [aws_iam_role_policy_attachment.logs, aws_iam_role_policy.durable, aws_cloudwatch_log_group.function]
}
