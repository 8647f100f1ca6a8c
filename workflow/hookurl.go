package workflow

import "github.com/cairn-go/cairn/worlds"

// URL returns the webhook URL that resumes the hook, for third parties that call
// back over HTTP: the World's webhook endpoint with the hook's token. It reports
// false when the World does not implement [worlds.WebhookURLs] or has no base
// URL configured (the AWS World's Config.BaseURL). The URL carries the token,
// which is the hook's only credential: hand it only to the intended sender.
func (h *Hook[T]) URL() (string, bool) {
	if h == nil || h.exec == nil || h.Token == "" {
		return "", false
	}
	u, ok := h.exec.world.(worlds.WebhookURLs)
	if !ok {
		return "", false
	}
	return u.WebhookURL(h.Token)
}
