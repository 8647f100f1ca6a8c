output "function_name" {
  description = "Name of the durable function. Invoke it qualified: <function_name>:$LATEST, or a version or alias."
  value       = aws_cloudformation_stack.function.outputs["FunctionName"]
}

output "function_arn" {
  description = "Unqualified ARN of the durable function."
  value       = aws_cloudformation_stack.function.outputs["FunctionArn"]
}

output "stack_name" {
  description = "CloudFormation stack holding the function (its events explain a failed deployment)."
  value       = aws_cloudformation_stack.function.name
}

output "role_arn" {
  description = "The function's execution role."
  value       = aws_iam_role.function.arn
}

output "log_group_name" {
  description = "The function's CloudWatch log group."
  value       = aws_cloudwatch_log_group.function.name
}

output "package" {
  description = "Where the deployment package was uploaded: bucket, key, version_id (empty in an unversioned bucket) and the zip's sha256."
  value = {
    bucket     = aws_s3_object.package.bucket
    key        = aws_s3_object.package.key
    version_id = aws_s3_object.package.version_id
    sha256     = local.package_sha256
  }
}
