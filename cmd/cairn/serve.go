package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"strings"

	"github.com/cairn-go/cairn/internal/httpguard"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// serveFlagsUsage documents the flags of serveFlags, for the usage of the
// commands that register them.
const serveFlagsUsage = `  --allow-origin O  let pages of origin O (scheme://host[:port]) change state from a
                    browser; other origins' writes are refused (repeatable, comma-separated)
  --allow-host H    also answer to host name H on a loopback address (a tunnel, a dev
                    domain; '*' for any); else only localhost and loopback IPs (repeatable)
  --show-tokens     show hook tokens and webhook URLs in the UI and the RPC's listings
                    (hidden by default: anyone reaching the server could resume every hook)`

// serveFlags configure the HTTP servers of `cairn dev` and `cairn ui`.
type serveFlags struct {
	origins    []string // trusted origins for cross-origin writes
	hosts      []string // extra host names a loopback server answers to
	showTokens bool
}

// listFlag appends the comma-separated entries of a repeatable flag to dst,
// checking each with check.
func listFlag(dst *[]string, check func(string) error) func(string) error {
	return func(v string) error {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			if err := check(e); err != nil {
				return err
			}
			*dst = append(*dst, e)
		}
		return nil
	}
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.Func("allow-origin", "trusted origin for cross-origin writes (repeatable)", listFlag(&f.origins, func(o string) error {
		_, err := httpguard.NewWrites([]string{o})
		return err
	}))
	fs.Func("allow-host", "host name to answer to on a loopback address (repeatable; * for any)", listFlag(&f.hosts, func(h string) error {
		_, err := httpguard.NewHosts([]string{h})
		return err
	}))
	fs.BoolVar(&f.showTokens, "show-tokens", false, "show hook tokens in the UI and the RPC's listings")
}

// webhookPath reports whether p is a webhook route, {prefix}/webhooks/{token},
// in the canonical form the handler serves.
func webhookPath(p string) bool {
	token, ok := strings.CutPrefix(p, worldhttp.DefaultPrefix+"/webhooks/")
	return ok && token != "" && !strings.Contains(token, "/") && worldhttp.CanonicalPath(p)
}

// newServer returns the server of `cairn dev` or `cairn ui` for h: with the
// deadlines t (zero uses [httpguard.DefaultTimeouts]), and, on a loopback
// address, answering only to loopback host names and the allowed ones, so a
// page whose DNS name is rebound to 127.0.0.1 cannot reach it. Webhooks are
// exempt from the Host check, as from the origin checks: their token is their
// authorization, and a tunnel that forwards a third party's calls to the
// server keeps the tunnel's host name. Requests' contexts derive from base.
func newServer(h http.Handler, f serveFlags, t httpguard.Timeouts, base context.Context) (*http.Server, error) {
	hosts, err := httpguard.NewHosts(f.hosts)
	if err != nil {
		return nil, err
	}
	if t == (httpguard.Timeouts{}) {
		t = httpguard.DefaultTimeouts()
	}
	srv := &http.Server{
		Handler:     hosts.Handler(h, func(r *http.Request) bool { return webhookPath(r.URL.Path) }),
		BaseContext: func(net.Listener) context.Context { return base },
	}
	t.Apply(srv)
	return srv, nil
}
