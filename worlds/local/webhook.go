package local

import (
	"net/url"

	"github.com/cairn-go/cairn/worlds"
)

var _ worlds.WebhookURLs = (*World)(nil)

// WebhookURL returns <Config.BaseURL>/webhooks/<token>, the URL a webhook
// handler mounted under the base URL (worldhttp's, or workflow's
// WebhookHandler at <prefix>/webhooks/{token}) resumes the hook owning token
// at, and false when Config.BaseURL is unset.
func (w *World) WebhookURL(token string) (string, bool) {
	if w.cfg.BaseURL == "" || token == "" {
		return "", false
	}
	return w.cfg.BaseURL + "/webhooks/" + url.PathEscape(token), true
}
