package httpguard_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/internal/httpguard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWritesCheck(t *testing.T) {
	t.Parallel()
	trusting, err := httpguard.NewWrites([]string{"https://app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	const json = "application/json"
	for _, tc := range []struct {
		name    string
		g       *httpguard.Writes
		method  string
		headers map[string]string
		status  int // 0 for allowed
	}{
		{"GET is safe", nil, "GET", map[string]string{"Sec-Fetch-Site": "cross-site"}, 0},
		{"HEAD is safe", nil, "HEAD", map[string]string{"Origin": "https://evil.example"}, 0},
		{"JSON from curl", nil, "POST", map[string]string{"Content-Type": json}, 0},
		{"JSON with charset", nil, "POST", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 0},
		{"JSON same-origin page", nil, "POST", map[string]string{"Content-Type": json, "Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8080"}, 0},
		{"JSON typed in the address bar", nil, "POST", map[string]string{"Content-Type": json, "Sec-Fetch-Site": "none"}, 0},
		{"old browser same origin", nil, "POST", map[string]string{"Content-Type": json, "Origin": "http://127.0.0.1:8080"}, 0},
		{"text/plain", nil, "POST", map[string]string{"Content-Type": "text/plain"}, 415},
		{"form", nil, "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"no content type", nil, "DELETE", nil, 415},
		{"cross-site form", nil, "POST", map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"cross-site JSON", nil, "POST", map[string]string{"Content-Type": json, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"same-site other port", nil, "POST", map[string]string{"Content-Type": json, "Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:3000"}, 403},
		{"old browser foreign origin", nil, "POST", map[string]string{"Content-Type": json, "Origin": "https://evil.example"}, 403},
		{"trusted origin", trusting, "POST", map[string]string{"Content-Type": json, "Sec-Fetch-Site": "cross-site", "Origin": "https://app.example.com"}, 0},
		{"trusted origin still sends JSON", trusting, "POST", map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site", "Origin": "https://app.example.com"}, 415},
		{"untrusted origin of a trusting guard", trusting, "POST", map[string]string{"Content-Type": json, "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tc.method, "http://127.0.0.1:8080/v1/workflow/rpc", strings.NewReader("{}"))
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			err := tc.g.Check(r)
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ref *httpguard.Refusal
			if !errors.As(err, &ref) || ref.Status != tc.status || !errors.Is(err, httpguard.ErrRefused) {
				t.Fatalf("got %v, want a %d refusal", err, tc.status)
			}
		})
	}
}

func TestNewWritesRejectsMalformedOrigins(t *testing.T) {
	t.Parallel()
	for _, o := range []string{"app.example.com", "https://app.example.com/path", "", "https://"} {
		_, err := httpguard.NewWrites([]string{o})
		var oe *httpguard.OriginError
		if !errors.As(err, &oe) || oe.Value != o || !strings.Contains(err.Error(), o) {
			t.Errorf("%q: got %v, want an *OriginError naming it", o, err)
		}
	}
}

func TestNewHostsRejectsMalformedHosts(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "http://dev.example", "dev.example:8080", "dev.example/x"} {
		_, err := httpguard.NewHosts([]string{h})
		var he *httpguard.HostError
		if !errors.As(err, &he) || he.Value != h {
			t.Errorf("%q: got %v, want a *HostError naming it", h, err)
		}
	}
	if _, err := httpguard.NewHosts([]string{"Dev.Example.", "::1", "[fe80::1]", httpguard.AnyHost}); err != nil {
		t.Fatal(err)
	}
}

func TestHostsCheck(t *testing.T) {
	t.Parallel()
	tunnel, err := httpguard.NewHosts([]string{"Abc.Tunnel.Example"})
	if err != nil {
		t.Fatal(err)
	}
	anyHost, err := httpguard.NewHosts([]string{httpguard.AnyHost})
	if err != nil {
		t.Fatal(err)
	}
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8080}
	for _, tc := range []struct {
		name  string
		g     *httpguard.Hosts
		local net.Addr
		host  string
		ok    bool
	}{
		{"127.0.0.1 with port", nil, loop, "127.0.0.1:8080", true},
		{"127.1.2.3", nil, loop, "127.1.2.3:8080", true},
		{"localhost", nil, loop, "localhost:8080", true},
		{"LOCALHOST no port", nil, loop, "LOCALHOST", true},
		{"under .localhost", nil, loop, "ui.localhost:8080", true},
		{"IPv6 loopback", nil, &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "[::1]:8080", true},
		{"rebound name", nil, loop, "evil.example:8080", false},
		{"rebound name without port", nil, loop, "evil.example", false},
		{"name ending in localhost", nil, loop, "evillocalhost:8080", false},
		{"LAN address as host", nil, loop, "192.168.1.5:8080", false},
		{"empty host", nil, loop, "", false},
		{"allowed tunnel host", tunnel, loop, "abc.tunnel.example", true},
		{"allowed host other case and port", tunnel, loop, "ABC.tunnel.example:443", true},
		{"other host of a tunnel guard", tunnel, loop, "evil.example", false},
		{"any host", anyHost, loop, "evil.example", true},
		{"not on loopback", nil, lan, "evil.example", true},
		{"no connection", nil, nil, "evil.example", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			r.Host = tc.host
			if tc.local != nil {
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
			}
			err := tc.g.Check(r)
			if tc.ok != (err == nil) {
				t.Fatalf("Host %q on %v: got %v, want ok=%v", tc.host, tc.local, err, tc.ok)
			}
			var ref *httpguard.Refusal
			if err != nil && (!errors.As(err, &ref) || ref.Status != http.StatusForbidden || ref.Header != "Host" || ref.Value != tc.host) {
				t.Fatalf("refusal %#v", err)
			}
		})
	}
}

// Over a real loopback connection the middleware refuses a rebound Host with a
// JSON 403 and lets exempt requests and loopback names through.
func TestHostsHandlerOnLoopback(t *testing.T) {
	t.Parallel()
	g, err := httpguard.NewHosts(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/hooks/") })
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		host, path string
		status     int
	}{
		{"evil.example", "/api", 403},
		{"localhost", "/api", 200},
		{"evil.example", "/hooks/tok", 200},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
		req.Host = tc.host
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Fatalf("Host %s %s: %d %s, want %d", tc.host, tc.path, res.StatusCode, b, tc.status)
		}
		if tc.status == 403 && (!strings.Contains(string(b), `"code":"forbidden"`) || res.Header.Get("Content-Type") != "application/json") {
			t.Fatalf("refusal body %s", b)
		}
	}
}

// A client that sends its body slowly is cut off by the server's ReadTimeout:
// it gets a 408 or a closed connection, long before the test's deadline.
func TestTimeoutsCutOffASlowBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusRequestTimeout)
			return
		}
		io.WriteString(w, "read it all")
	}))
	httpguard.Timeouts{ReadHeader: 50 * time.Millisecond, Read: 100 * time.Millisecond, Write: 5 * time.Second, Idle: time.Second}.Apply(srv.Config)
	srv.Start()
	defer srv.Close()
	assertCutOff(t, srv.Listener.Addr().String(), "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	assertCutOff(t, srv.Listener.Addr().String(), "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\n")
}

// assertCutOff sends the start of a request and then nothing, and wants the
// server to answer 408 or close the connection within a generous deadline.
func assertCutOff(t *testing.T, addr, start string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, start); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case err == nil:
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("a stalled request was answered %d, want 408 or a closed connection", res.StatusCode)
		}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server kept a stalled request open until the test's deadline")
		}
		if !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("reading the answer: %v", err)
		}
	}
}
