package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The World is opened once, on the first request, with the base URL its Host
// names; a failed open answers 500 and is tried again on the next request.
func TestLazyWebhookOpensOnceFromTheHost(t *testing.T) {
	t.Parallel()
	var bases []string
	fail := true
	l := &lazyWebhook{open: func(_ context.Context, base string) (http.Handler, error) {
		bases = append(bases, base)
		if fail {
			fail = false
			return nil, errors.New("no credentials")
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }), nil
	}}
	codes := []int{}
	for range 3 {
		rec := httptest.NewRecorder()
		l.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "https://hook-id.lambda-url.eu-west-1.on.aws/v1/workflow/webhooks/tok", nil))
		codes = append(codes, rec.Code)
	}
	if want := []int{500, 202, 202}; codes[0] != want[0] || codes[1] != want[1] || codes[2] != want[2] {
		t.Errorf("status codes %v, want %v", codes, want)
	}
	if len(bases) != 2 || bases[1] != "https://hook-id.lambda-url.eu-west-1.on.aws/v1/workflow" {
		t.Errorf("opened with %q, want twice with the Host's base URL", bases)
	}
}
