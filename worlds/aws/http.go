package awsworld

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-go/cairn/worlds"

	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// HTTPOption configures [HTTP], [HTTPPrefix] and [RPC].
type HTTPOption func(*worldhttp.Options)

// WithWorkflows makes runs.start accept only the workflows runners run (the
// worker's runner set, for example worlds.Runners(workflow.Use(...))) and check
// a start's input against its workflow's input type before the run is
// created. Any other name is refused with 400 and a *[worlds.UnknownWorkflowError]
// naming the known ones, instead of a run that stays pending while the worker
// fails every delivery of it. The runners also answer runs.query, by
// replaying the run with their code in the API function and writing nothing;
// the handler never runs their deliveries.
func WithWorkflows(runners worlds.Runner) HTTPOption {
	return func(o *worldhttp.Options) { o.Workflows = runners }
}

func (w *World) httpOptions(prefix string, opts []HTTPOption) worldhttp.Options {
	o := worldhttp.Options{Prefix: prefix, NewRunID: w.newID, ShowTokens: true}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// HTTP serves the RPC and webhook endpoints under /v1/workflow, for a Lambda
// Function URL (lambdaurl.Start(awsworld.HTTP(world))) or any net/http server. It
// needs no runners; without [WithWorkflows] runs.start accepts any workflow
// name. See package worldhttp for the RPC methods.
func HTTP(world *World, opts ...HTTPOption) http.Handler {
	return HTTPPrefix(world, worldhttp.DefaultPrefix, opts...)
}

// HTTPPrefix serves the same endpoints under prefix. Hook views carry their
// tokens and webhook URLs (worldhttp.Options.ShowTokens): the RPC endpoint is
// meant to be behind IAM, where listing the hooks is how an operator finds the
// URL to resume one.
func HTTPPrefix(world *World, prefix string, opts ...HTTPOption) http.Handler {
	return worldhttp.Handler(world, world.httpOptions(prefix, opts))
}

// RPC serves only the RPC endpoint, POST /v1/workflow/rpc, behind IAM, with
// hook tokens and webhook URLs in hook views as HTTPPrefix does.
func RPC(world *World, opts ...HTTPOption) http.Handler {
	return worldhttp.RPC(world, world.httpOptions("", opts))
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
