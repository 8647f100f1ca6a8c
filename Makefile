# The one test command lives in scripts/test; make is a convenience wrapper.
.PHONY: test lambda terraform-check
test:
	./scripts/test

# The deploy/aws Lambda archives (deploy/aws/build/*.zip), see deploy/aws/README.md.
lambda:
	./scripts/lambda

# fmt, validate and terraform test of worlds/aws/terraform, deploy/aws and
# examples/durable/deploy, offline.
terraform-check:
	./scripts/terraform-check
