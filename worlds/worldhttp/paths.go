package worldhttp

import (
	"net/http"
	"path"
)

// exactPaths answers requests whose path is not in canonical form (".", "..",
// doubled slashes, as a webhook token of "." produces) with a JSON 404, where
// http.ServeMux would redirect with an HTML body that no client of these
// endpoints can read.
func exactPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !CanonicalPath(r.URL.Path) {
			notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CanonicalPath reports whether p is absolute and already clean, so an
// http.ServeMux routes it without redirecting: the handlers of this package answer
// other paths with a JSON 404, and so should a handler that mounts them.
func CanonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	return c == p || c+"/" == p
}
