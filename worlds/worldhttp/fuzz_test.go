package worldhttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// Bad input never reaches a 500 and always gets a JSON body.
func FuzzRPC(f *testing.F) {
	for _, seed := range []string{
		`{"method":"runs.get","params":{"runId":"r1"}}`,
		`{"method":"runs.start","params":{"workflowName":"w","input":{"a":1}}}`,
		`{"method":"hooks.resume","params":{"token":"tok","payload":[1,2]}}`,
		`{"method":"runs.list","params":{"status":"weird","limit":-1}}`,
		`{"method":"streams.read","params":{"runId":"r","name":"s","from":-5}}`,
		`{"method":1}`, `[]`, ``, `{"params":"x"}`,
	} {
		f.Add(seed, "tok")
	}
	f.Fuzz(func(t *testing.T, body, token string) {
		h := worldhttp.Handler(newFake(), worldhttp.Options{MaxBodyBytes: 4096})
		for _, path := range []string{"/v1/workflow/rpc", "/v1/workflow/webhooks/" + token} {
			rec := httptest.NewRecorder()
			req, err := http.NewRequest(http.MethodPost, path, strings.NewReader(body))
			if err != nil {
				return // not a valid URL: the server would never see it
			}
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %q: body is not JSON: %q", path, body, rec.Body)
			}
		}
	})
}
