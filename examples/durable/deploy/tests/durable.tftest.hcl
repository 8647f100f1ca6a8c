# Offline checks of the durable function's deployment with a mocked AWS
# provider: no credentials, no network. The zips in tests/package are
# placeholders; the plans only hash and name them.
# Run with: terraform init -backend=false && terraform test

mock_provider "aws" {
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
  mock_data "aws_region" {
    defaults = { name = "us-east-2" }
  }
  mock_data "aws_caller_identity" {
    defaults = { account_id = "123456789012" }
  }
  mock_resource "aws_iam_role" {
    defaults = { arn = "arn:aws:iam::123456789012:role/durable-orders-role" }
  }
  mock_resource "aws_s3_bucket" {
    defaults = { id = "code-durable-orders-20261204000000000000000001" }
  }
  mock_resource "aws_s3_object" {
    defaults = { version_id = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY" }
  }
  mock_resource "aws_cloudformation_stack" {
    defaults = {
      outputs = {
        FunctionName = "durable-orders"
        FunctionArn  = "arn:aws:lambda:us-east-2:123456789012:function:durable-orders"
      }
    }
  }
}

variables {
  package_path = "tests/package/durable-orders.zip"
}

run "durable_function" {
  command = apply
  variables {
    execution_timeout_seconds = 3600
    retention_period_days     = 7
    environment               = { COOLING_OFF = "1m" }
  }

  assert {
    condition     = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Type == "AWS::Lambda::Function"
    error_message = "the stack holds one AWS::Lambda::Function"
  }
  assert {
    condition     = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.DurableConfig == { ExecutionTimeout = 3600, RetentionPeriodInDays = 7 }
    error_message = "the function's DurableConfig carries execution_timeout_seconds and retention_period_days"
  }
  assert {
    condition = alltrue([
      for k, v in {
        FunctionName = "durable-orders", Runtime = "provided.al2023", Handler = "bootstrap", Timeout = 60, MemorySize = 256
        Role         = "arn:aws:iam::123456789012:role/durable-orders-role"
      } : jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties[k] == v
    ]) && jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.Architectures == ["arm64"]
    error_message = "bootstrap on provided.al2023 arm64, with the role, timeout and memory of the variables"
  }
  assert {
    condition = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.Code == {
      S3Bucket        = "code-durable-orders-20261204000000000000000001"
      S3Key           = "durable-orders/${filesha256("tests/package/durable-orders.zip")}.zip"
      S3ObjectVersion = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
    }
    error_message = "the code is the uploaded object, named by its sha256, pinned to its version"
  }
  assert {
    condition     = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.Environment == { Variables = { COOLING_OFF = "1m" } }
    error_message = "environment reaches the function"
  }
  assert {
    condition = jsondecode(aws_cloudformation_stack.function.template_body).Outputs == {
      FunctionName = { Value = { Ref = "Function" } }
      FunctionArn  = { Value = { "Fn::GetAtt" = ["Function", "Arn"] } }
    }
    error_message = "the stack outputs the function's name and ARN"
  }
  assert {
    condition     = output.function_name == "durable-orders" && output.function_arn == "arn:aws:lambda:us-east-2:123456789012:function:durable-orders"
    error_message = "the function_name and function_arn outputs come from the stack's outputs"
  }
  assert {
    condition     = aws_cloudformation_stack.function.name == "lambda-durable-orders" && aws_cloudformation_stack.function.on_failure == "DELETE"
    error_message = "stack lambda-<function_name>, deleted when its creation fails"
  }
  assert {
    condition = anytrue([for s in jsondecode(aws_iam_role_policy.durable.policy).Statement :
      s.Effect == "Allow" && toset(s.Action) == toset(["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"]) &&
    contains(s.Resource, "arn:aws:lambda:us-east-2:123456789012:function:durable-orders:*")])
    error_message = "the role may checkpoint and read the state of the function's executions (<function ARN>:*)"
  }
  assert {
    condition     = length(jsondecode(aws_iam_role_policy.durable.policy).Statement) == 1 && !strcontains(aws_iam_role_policy.durable.policy, "lambda:InvokeFunction")
    error_message = "no invoke_function_arns, no lambda:InvokeFunction"
  }
  assert {
    condition     = aws_iam_role_policy.durable.role == aws_iam_role.function.id && aws_iam_role.function.name == "durable-orders-role"
    error_message = "the durable policy is on the function's role"
  }
  assert {
    condition     = jsondecode(aws_iam_role.function.assume_role_policy).Statement[0].Principal.Service == "lambda.amazonaws.com"
    error_message = "Lambda assumes the role"
  }
  assert {
    condition     = aws_iam_role_policy_attachment.logs.policy_arn == "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole" && aws_iam_role_policy_attachment.logs.role == aws_iam_role.function.name
    error_message = "the role has the basic execution policy for logs"
  }
  assert {
    condition     = aws_cloudwatch_log_group.function.name == "/aws/lambda/durable-orders" && aws_cloudwatch_log_group.function.retention_in_days == 30
    error_message = "the function's log group, with its retention"
  }
  assert {
    condition     = length(aws_s3_bucket.artifacts) == 1 && aws_s3_object.package.bucket == aws_s3_bucket.artifacts[0].id && aws_s3_bucket_public_access_block.artifacts[0].block_public_policy && aws_s3_bucket_public_access_block.artifacts[0].restrict_public_buckets
    error_message = "without artifact_bucket the root creates a private bucket for the package"
  }
  assert {
    condition     = aws_s3_object.package.source == "tests/package/durable-orders.zip" && aws_s3_object.package.source_hash == filesha256("tests/package/durable-orders.zip")
    error_message = "the object uploads package_path and hashes it"
  }
}

run "new_code_is_a_new_object" {
  command = apply
  variables {
    package_path = "tests/package/durable-orders-v2.zip"
  }

  assert {
    condition     = output.package.sha256 != run.durable_function.package.sha256 && aws_s3_object.package.source_hash != run.durable_function.package.sha256
    error_message = "another zip has another hash"
  }
  assert {
    condition     = output.package.key != run.durable_function.package.key && output.package.key == "durable-orders/${filesha256("tests/package/durable-orders-v2.zip")}.zip"
    error_message = "another zip is another object key"
  }
  assert {
    condition     = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.Code.S3Key == output.package.key
    error_message = "the template follows the new key, so CloudFormation updates the function's code"
  }
}

run "default_durable_config" {
  command = apply

  assert {
    condition     = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.DurableConfig == { ExecutionTimeout = 86400, RetentionPeriodInDays = 14 }
    error_message = "by default an execution may run a day and its history is kept 14 days"
  }
  assert {
    condition     = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.Environment == { Variables = {} }
    error_message = "no environment by default"
  }
}

run "invoke_grants" {
  command = apply
  variables {
    invoke_function_arns = [
      "arn:aws:lambda:us-east-2:123456789012:function:inventory",
      "arn:aws:lambda:us-east-2:123456789012:function:payments:prod",
    ]
  }

  assert {
    condition = anytrue([for s in jsondecode(aws_iam_role_policy.durable.policy).Statement :
      s.Effect == "Allow" && s.Action == ["lambda:InvokeFunction"] && toset(s.Resource) == toset([
        "arn:aws:lambda:us-east-2:123456789012:function:inventory",
        "arn:aws:lambda:us-east-2:123456789012:function:inventory:*",
        "arn:aws:lambda:us-east-2:123456789012:function:payments:prod",
    ])])
    error_message = "the role may invoke each listed function, an unqualified one with its versions and aliases"
  }
  assert {
    condition = anytrue([for s in jsondecode(aws_iam_role_policy.durable.policy).Statement :
    contains(s.Action, "lambda:CheckpointDurableExecution") && contains(s.Resource, "arn:aws:lambda:us-east-2:123456789012:function:durable-orders:*")])
    error_message = "the checkpoint grant stays"
  }
}

run "underscores_in_the_name" {
  command = plan
  variables {
    function_name = "orders_v2"
  }

  assert {
    condition     = aws_cloudformation_stack.function.name == "lambda-orders-v2" && aws_s3_bucket.artifacts[0].bucket_prefix == "code-orders-v2-"
    error_message = "stack names and bucket names take no underscores"
  }
  assert {
    condition     = aws_iam_role.function.name == "orders_v2-role" && aws_cloudwatch_log_group.function.name == "/aws/lambda/orders_v2"
    error_message = "role and log group follow function_name"
  }
}

run "missing_package" {
  command = plan
  variables {
    package_path = "tests/package/no-such.zip"
  }
  expect_failures = [aws_s3_object.package]
}

# Every input is validated.

run "function_name_with_a_space" {
  command = plan
  variables {
    function_name = "durable orders"
  }
  expect_failures = [var.function_name]
}

run "function_name_too_long" {
  command = plan
  variables {
    function_name = "a23456789012345678901234567890123456789012345678901234567890"
  }
  expect_failures = [var.function_name]
}

run "execution_timeout_zero" {
  command = plan
  variables {
    execution_timeout_seconds = 0
  }
  expect_failures = [var.execution_timeout_seconds]
}

run "execution_timeout_beyond_366_days" {
  command = plan
  variables {
    execution_timeout_seconds = 31622401
  }
  expect_failures = [var.execution_timeout_seconds]
}

run "execution_timeout_fractional" {
  command = plan
  variables {
    execution_timeout_seconds = 1.5
  }
  expect_failures = [var.execution_timeout_seconds]
}

run "retention_zero" {
  command = plan
  variables {
    retention_period_days = 0
  }
  expect_failures = [var.retention_period_days]
}

run "retention_beyond_90_days" {
  command = plan
  variables {
    retention_period_days = 91
  }
  expect_failures = [var.retention_period_days]
}

run "timeout_zero" {
  command = plan
  variables {
    timeout_seconds = 0
  }
  expect_failures = [var.timeout_seconds]
}

run "timeout_beyond_900" {
  command = plan
  variables {
    timeout_seconds = 901
  }
  expect_failures = [var.timeout_seconds]
}

run "memory_below_128" {
  command = plan
  variables {
    memory_mb = 127
  }
  expect_failures = [var.memory_mb]
}

run "memory_beyond_10240" {
  command = plan
  variables {
    memory_mb = 10241
  }
  expect_failures = [var.memory_mb]
}

run "package_not_a_zip" {
  command = plan
  variables {
    package_path = "tests/package/durable-orders.tar.gz"
  }
  expect_failures = [var.package_path]
}

run "bucket_name_invalid" {
  command = plan
  variables {
    artifact_bucket = "My_Bucket"
  }
  expect_failures = [var.artifact_bucket]
}

run "invoke_arn_not_a_function" {
  command = plan
  variables {
    invoke_function_arns = ["arn:aws:s3:::my-artifacts"]
  }
  expect_failures = [var.invoke_function_arns]
}

run "environment_name_invalid" {
  command = plan
  variables {
    environment = { "1ST" = "x" }
  }
  expect_failures = [var.environment]
}

run "log_retention_not_a_period" {
  command = plan
  variables {
    log_retention_days = 2
  }
  expect_failures = [var.log_retention_days]
}

run "region_invalid" {
  command = plan
  variables {
    region = "Ohio"
  }
  expect_failures = [var.region]
}

run "tag_in_the_aws_namespace" {
  command = plan
  variables {
    tags = { "aws:owner" = "me" }
  }
  expect_failures = [var.tags]
}
