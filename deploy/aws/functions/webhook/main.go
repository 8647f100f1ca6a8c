// Command webhook is the deploy/aws public webhook function: a Function URL with
// no auth (RESPONSE_STREAM, for lambdaurl) that serves only
// POST /v1/workflow/webhooks/{token}, authorized by the token alone. It builds no
// webhook URLs, so it needs no WORKFLOW_BASE_URL (the Terraform root cannot give
// a function its own URL).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/cairn-go/cairn/deploy/aws/functions/internal/deployment"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

func main() {
	log := deployment.Logger()
	world, err := deployment.Open(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("webhook: cannot open the World", "err", err)
		os.Exit(1)
	}
	lambdaurl.Start(awsworld.Webhook(world))
}
