terraform {
  # mock_provider and override_resource in the tests need 1.7.
  required_version = ">= 1.7"
  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.x has no durable_config on aws_lambda_function, so the function is a
      # CloudFormation resource (main.tf). 6.25.0 added the native block.
      version = "~> 5.100"
    }
  }
}

provider "aws" {
  # null reads AWS_REGION / the profile, like the AWS CLI.
  region = var.region
  default_tags {
    tags = var.tags
  }
}
