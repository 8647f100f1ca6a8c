# An existing, unversioned bucket for the deployment package. In a file of its
# own because each test file starts from an empty state: within one file, the
# mocked object would keep the version_id an earlier run gave it.

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
  mock_resource "aws_s3_object" {
    defaults = { version_id = "" }
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

run "existing_unversioned_bucket" {
  command = apply
  variables {
    artifact_bucket = "my-artifacts"
  }

  assert {
    condition     = length(aws_s3_bucket.artifacts) == 0 && length(aws_s3_bucket_public_access_block.artifacts) == 0
    error_message = "with artifact_bucket the root creates no bucket"
  }
  assert {
    condition = jsondecode(aws_cloudformation_stack.function.template_body).Resources.Function.Properties.Code == {
      S3Bucket = "my-artifacts"
      S3Key    = "durable-orders/${filesha256("tests/package/durable-orders.zip")}.zip"
    }
    error_message = "the code comes from artifact_bucket, without S3ObjectVersion when the bucket reports none"
  }
}
