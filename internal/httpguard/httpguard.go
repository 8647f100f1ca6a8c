// Package httpguard keeps web pages in a developer's browser away from cairn's
// HTTP servers and handlers, one way for all of them:
//
//   - [Writes] refuses state-changing requests that are not JSON (415) or that a
//     browser sent for a page of another origin (403), so a page cannot submit
//     a form or a text/plain fetch to start, cancel or resume anything;
//   - [Hosts] refuses requests that reached a loopback address under a host
//     name that is not a loopback one (403), so a page whose DNS name is
//     rebound to 127.0.0.1 cannot read from or write to a local server;
//   - [Timeouts] are the deadlines of every server the CLI starts.
//
// The checks return a [*Refusal] for the caller to answer in its own error
// format; [Hosts.Handler] is the middleware form for a whole server.
package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// ErrRefused is matched by every [*Refusal].
var ErrRefused = errors.New("httpguard: request refused")

// Refusal is why a request was refused: the status to answer, a short error
// code, and the header and value at fault.
type Refusal struct {
	Status int    // 403 or 415
	Code   string // "forbidden" or "unsupported_media_type"
	Header string // the request header at fault
	Value  string // its value
	Reason string // what is wrong with it and how to allow it
}

func (e *Refusal) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Header, e.Value, e.Reason)
}

// Unwrap makes a Refusal match [ErrRefused].
func (e *Refusal) Unwrap() error { return ErrRefused }

// OriginError reports an entry of a trusted-origin list that is not an origin.
type OriginError struct {
	Value string
	Err   error
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("trusted origin %q: want scheme://host[:port]: %v", e.Value, e.Err)
}

func (e *OriginError) Unwrap() error { return e.Err }

// HostError reports an entry of an allowed-host list that is not a host name.
type HostError struct {
	Value  string
	Reason string
}

func (e *HostError) Error() string {
	return fmt.Sprintf("allowed host %q: %s", e.Value, e.Reason)
}

// Writes checks state-changing requests (every method but GET, HEAD and
// OPTIONS). Build it with [NewWrites].
type Writes struct {
	cop *http.CrossOriginProtection
}

// NewWrites returns the write check, letting pages of the trusted origins
// (scheme://host[:port], as a browser sends them in Origin) write across
// origins. A malformed origin is an *OriginError.
func NewWrites(trustedOrigins []string) (*Writes, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, &OriginError{Value: o, Err: err}
		}
	}
	return &Writes{cop: cop}, nil
}

// Check returns nil for a safe method, and for a write that is JSON and sent
// by a non-browser client, by a page of the same origin, or by a page of a
// trusted origin. Otherwise it returns a *Refusal:
//
//   - 403 when Sec-Fetch-Site is not same-origin or none (a page of another
//     site, or of another port of the same host), or, from a browser that does
//     not send Sec-Fetch-Site, when Origin names another host than Host;
//   - 415 when Content-Type is not application/json.
//
// A nil *Writes refuses cross-origin writes and trusts no origin.
func (g *Writes) Check(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	cop := http.NewCrossOriginProtection()
	if g != nil {
		cop = g.cop
	}
	if err := cop.Check(r); err != nil {
		header, value := "Origin", r.Header.Get("Origin")
		if v := r.Header.Get("Sec-Fetch-Site"); v != "" {
			header, value = "Sec-Fetch-Site", v
		}
		return &Refusal{Status: http.StatusForbidden, Code: "forbidden", Header: header, Value: value,
			Reason: "a page of another origin may not change state here (trust its origin to allow it)"}
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
		return &Refusal{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Header: "Content-Type", Value: ct,
			Reason: "requests that change state need Content-Type: application/json"}
	}
	return nil
}

// AnyHost, as an entry of an allowed-host list, turns the Host check off.
const AnyHost = "*"

// Hosts checks the Host of requests that reached a loopback address. Build it
// with [NewHosts].
type Hosts struct {
	allowed map[string]bool
	any     bool
}

// NewHosts returns the Host check, accepting the allowed host names (without
// port; [AnyHost] accepts every name) besides the loopback ones: localhost,
// *.localhost, and IP addresses in 127.0.0.0/8 and ::1. An entry with a
// scheme, a port or a path is a *HostError.
func NewHosts(allowed []string) (*Hosts, error) {
	h := &Hosts{allowed: map[string]bool{}}
	for _, a := range allowed {
		switch {
		case a == AnyHost:
			h.any = true
			continue
		case a == "":
			return nil, &HostError{Value: a, Reason: "empty"}
		case strings.ContainsAny(a, "/:@ ") && !isIPv6(a):
			return nil, &HostError{Value: a, Reason: "want a bare host name or IP address, without scheme, port or path"}
		}
		h.allowed[normalHost(a)] = true
	}
	return h, nil
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil && a.Is6()
}

// normalHost lower-cases a host name and drops IPv6 brackets and a trailing dot.
func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// Loopback reports whether host (without port) names this machine's loopback
// interface whatever DNS says: localhost, a name under .localhost, or a
// loopback IP address.
func Loopback(host string) bool {
	host = normalHost(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Check returns nil unless the request reached the server on a loopback
// address (its connection's local address, [http.LocalAddrContextKey]) under a
// Host that is neither a loopback name nor allowed; then it returns a 403
// *Refusal. A request served outside a net/http server (no local address), or
// on another address, is not checked: the check guards loopback servers
// against DNS rebinding, and a server on another address has chosen who may
// reach it. A nil *Hosts allows loopback names only.
func (h *Hosts) Check(r *http.Request) error {
	if h != nil && h.any {
		return nil
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !loopbackAddr(local) {
		return nil
	}
	name := r.Host
	if n, _, err := net.SplitHostPort(name); err == nil {
		name = n
	}
	if Loopback(name) || h != nil && h.allowed[normalHost(name)] {
		return nil
	}
	return &Refusal{Status: http.StatusForbidden, Code: "forbidden", Header: "Host", Value: r.Host,
		Reason: "a server on a loopback address answers only to loopback host names (allow the host to reach it under this name)"}
}

func loopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// Handler wraps next with the Host check, answering a refusal with the JSON
// error body of package worldhttp ({"error": {"code", "message"}}), which the
// web UI reads too. Requests for which exempt returns true are not checked.
func (h *Hosts) Handler(next http.Handler, exempt func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt == nil || !exempt(r) {
			if err := h.Check(r); err != nil {
				WriteRefusal(w, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// WriteRefusal answers err, a *Refusal, as {"error": {"code", "message"}}.
// Another error answers 403 with its message.
func WriteRefusal(w http.ResponseWriter, err error) {
	status, code := http.StatusForbidden, "forbidden"
	var ref *Refusal
	if errors.As(err, &ref) {
		status, code = ref.Status, ref.Code
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = code, err.Error()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Timeouts are a server's deadlines (see [http.Server]). A handler of a
// long-lived response (a stream of server-sent events) lifts ReadTimeout and
// WriteTimeout for its connection with [http.ResponseController].
type Timeouts struct {
	// ReadHeader bounds reading a request's headers.
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included: a client sending its
	// body slowly is answered 408 or cut off.
	Read time.Duration
	// Write bounds the time from the end of the request's headers to the end
	// of the response.
	Write time.Duration
	// Idle bounds how long a kept-alive connection waits for its next request.
	Idle time.Duration
}

// DefaultTimeouts are the deadlines of `cairn dev` and `cairn ui`: enough for
// a request body of the largest size the handlers accept over a slow link,
// and for the slowest RPC call to a remote World.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 2 * time.Minute, Idle: 2 * time.Minute}
}

// Apply sets the deadlines on srv.
func (t Timeouts) Apply(srv *http.Server) {
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = t.ReadHeader, t.Read, t.Write, t.Idle
}
