package awsworld

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-go/cairn/worlds"

	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// HTTP serves the RPC and webhook endpoints under /v1/workflow, for a Lambda
// Function URL (lambdaurl.Start(awsworld.HTTP(world))) or any net/http server. It
// needs no runners. See package worldhttp for the RPC methods.
func HTTP(world *World) http.Handler { return HTTPPrefix(world, worldhttp.DefaultPrefix) }

// HTTPPrefix serves the same endpoints under prefix. Hook views carry their
// tokens and webhook URLs (worldhttp.Options.ShowTokens): the RPC endpoint is
// meant to be behind IAM, where listing the hooks is how an operator finds the
// URL to resume one.
func HTTPPrefix(world *World, prefix string) http.Handler {
	return worldhttp.Handler(world, worldhttp.Options{Prefix: prefix, NewRunID: world.newID, ShowTokens: true})
}

// RPC serves only the RPC endpoint, POST /v1/workflow/rpc, behind IAM, with
// hook tokens and webhook URLs in hook views as HTTPPrefix does.
func RPC(world *World) http.Handler {
	return worldhttp.RPC(world, worldhttp.Options{NewRunID: world.newID, ShowTokens: true})
}

// Webhook serves only POST /v1/workflow/webhooks/{token}, authorized by the token
// alone, so it can be the one route exposed publicly.
func Webhook(world *World) http.Handler {
	return worldhttp.Webhook(world, worldhttp.Options{})
}

var _ worlds.WebhookURLs = (*World)(nil)

// WebhookURL returns <Config.BaseURL>/webhooks/<token>, the URL Webhook(world)
// serves the hook owning token at, and false when Config.BaseURL is unset.
func (w *World) WebhookURL(token string) (string, bool) {
	if w.cfg.BaseURL == "" || token == "" {
		return "", false
	}
	return strings.TrimRight(w.cfg.BaseURL, "/") + "/webhooks/" + url.PathEscape(token), true
}
