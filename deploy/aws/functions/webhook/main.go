// Command webhook is the deploy/aws public webhook function: a Function URL with
// no auth (RESPONSE_STREAM, for lambdaurl) that serves only
// POST /v1/workflow/webhooks/{token}, authorized by the token alone.
//
// The function cannot be told its own URL (that would be a Terraform cycle), so
// without a custom domain in WORKFLOW_BASE_URL it learns it from the Host of its
// first request.
package main

import (
	"context"
	"net/http"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/cairn-go/cairn/deploy/aws/functions/internal/deployment"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// lazyWebhook opens the World on the first request that needs it.
type lazyWebhook struct {
	open func(ctx context.Context, baseURL string) (http.Handler, error)

	mu sync.Mutex
	h  http.Handler
}

func (l *lazyWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	h := l.h
	if h == nil {
		var err error
		if h, err = l.open(r.Context(), "https://"+r.Host+"/v1/workflow"); err != nil {
			l.mu.Unlock()
			deployment.Logger().Error("webhook: cannot open the World", "err", err)
			http.Error(w, `{"error":{"code":"internal","message":"webhook endpoint unavailable"}}`, http.StatusInternalServerError)
			return
		}
		l.h = h
	}
	l.mu.Unlock()
	h.ServeHTTP(w, r)
}

func main() {
	log := deployment.Logger()
	base := os.Getenv("WORKFLOW_BASE_URL")
	lambdaurl.Start(&lazyWebhook{open: func(ctx context.Context, fromHost string) (http.Handler, error) {
		if base == "" {
			base = fromHost
		}
		world, err := deployment.Open(ctx, os.Getenv, base, log)
		if err != nil {
			return nil, err
		}
		return awsworld.Webhook(world), nil
	}})
}
