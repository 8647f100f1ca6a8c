package main

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

func TestAnalyzer(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), Analyzer, "a", "b", "ignore")
}

// TestDurable checks durable code, the Lambda durable functions of package
// durable (durable/README.md, spec 2.5 "SHOULD provide lint rules"): functions
// taking a *durable.Context and what they call, except step bodies.
func TestDurable(t *testing.T) {
	t.Parallel()
	analysistest.Run(t, analysistest.TestData(), Analyzer, "lambda", "lambdaignore")
}
