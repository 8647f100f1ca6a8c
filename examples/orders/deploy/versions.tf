terraform {
  required_version = ">= 1.9"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
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
