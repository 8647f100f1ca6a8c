# The one test command lives in scripts/test; make is a convenience wrapper.
.PHONY: test
test:
	./scripts/test
