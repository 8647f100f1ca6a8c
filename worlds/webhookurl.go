package worlds

// WebhookURLs is implemented by Worlds that know the public URL their webhook
// endpoint is served at. WebhookURL returns the URL that resumes the hook owning
// token, and false when the World has no base URL configured.
type WebhookURLs interface {
	WebhookURL(token string) (string, bool)
}
