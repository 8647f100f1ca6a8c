package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/cli"
	"github.com/cairn-go/cairn/internal/httpguard"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

// request sends one request to the server at base, with Host host when it is
// not empty, and returns the status and body.
func request(t *testing.T, method, base, path, host, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func startTestDev(t *testing.T, o devOptions) *devServer {
	t.Helper()
	o.addr, o.db = "127.0.0.1:0", filepath.Join(t.TempDir(), "dev.db")
	d, err := startDev(context.Background(), o, cli.NewProgress(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// `cairn dev` on loopback answers only to loopback names (DNS rebinding) and
// refuses writes a page of another site could send; webhooks stay reachable
// under any name, as a tunnel forwards them.
func TestDevRefusesRebindingAndCrossSiteWrites(t *testing.T) {
	t.Parallel()
	d := startTestDev(t, devOptions{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(d.url, "http://"))
	const list = `{"method":"runs.list","params":{}}`
	const start = `{"method":"runs.start","params":{"workflowName":"demo.FulfilOrder","input":{"id":"x","items":["a"],"amountCt":1}}}`
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		name, method, path, host, body string
		headers                        map[string]string
		status                         int
	}{
		{"rebound UI read", "GET", "/api/runs", "evil.example:" + port, "", nil, 403},
		{"rebound page", "GET", "/", "evil.example", "", nil, 403},
		{"rebound RPC write", "POST", "/v1/workflow/rpc", "evil.example:" + port, start, jsonCT, 403},
		{"localhost", "GET", "/api/runs", "localhost:" + port, "", nil, 200},
		{"loopback IP", "POST", "/v1/workflow/rpc", "127.0.0.1:" + port, list, jsonCT, 200},
		{"text/plain RPC", "POST", "/v1/workflow/rpc", "", start, map[string]string{"Content-Type": "text/plain"}, 415},
		{"form RPC", "POST", "/v1/workflow/rpc", "", start, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"cross-site RPC", "POST", "/v1/workflow/rpc", "", start, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"foreign Origin UI", "POST", "/api/runs", "", `{"workflow":"demo.FulfilOrder"}`, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403},
		{"webhook under a tunnel's name", "POST", "/v1/workflow/webhooks/no-such-token", "abc.tunnel.example", "approved=1", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 404},
	} {
		status, body := request(t, tc.method, d.url, tc.path, tc.host, tc.body, tc.headers)
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
		}
	}
	page, err := d.world.ListRuns(context.Background(), worlds.RunFilter{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("refused requests started %d runs (%v)", len(page.Items), err)
	}
}

// --allow-host and --allow-origin let a named host and origin through.
func TestDevAllowListsLetNamedHostsAndOriginsIn(t *testing.T) {
	t.Parallel()
	d := startTestDev(t, devOptions{serve: serveFlags{hosts: []string{"dev.example"}, origins: []string{"https://ops.example.com"}}})
	if status, body := request(t, "GET", d.url, "/api/runs", "dev.example", "", nil); status != 200 {
		t.Fatalf("allowed host: %d %s", status, body)
	}
	if status, body := request(t, "GET", d.url, "/api/runs", "other.example", "", nil); status != 403 {
		t.Fatalf("another host: %d %s", status, body)
	}
	status, body := request(t, "POST", d.url, "/v1/workflow/rpc", "", `{"method":"runs.list","params":{}}`,
		map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site", "Origin": "https://ops.example.com"})
	if status != 200 {
		t.Fatalf("trusted origin: %d %s", status, body)
	}
}

func TestServeFlagsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--allow-origin", "ops.example.com"}, `"ops.example.com"`},
		{[]string{"dev", "--allow-host", "http://dev.example"}, `"http://dev.example"`},
		{[]string{"dev", "--allow-host", "dev.example:8080"}, `"dev.example:8080"`},
		{[]string{"ui", "--db", "x.db", "--allow-origin", "https://ok.example,nope"}, `"nope"`},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}

// The dev server's ReadTimeout cuts off a client that sends its body slowly:
// it gets a 408 or a closed connection, long before the test's deadline.
func TestDevCutsOffASlowBody(t *testing.T) {
	t.Parallel()
	d := startTestDev(t, devOptions{timeouts: httpguard.Timeouts{ReadHeader: 100 * time.Millisecond, Read: 200 * time.Millisecond, Write: 30 * time.Second, Idle: time.Second}})
	addr := strings.TrimPrefix(d.url, "http://")
	for _, start := range []string{
		"POST /v1/workflow/rpc HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"method\":",
		"POST /api/runs HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
		"POST /v1/workflow/rpc HTTP/1.1\r\nHost: " + addr + "\r\n",
	} {
		assertCutOff(t, addr, start)
	}
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
	var ne net.Error
	switch {
	case err == nil:
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("%q: answered %d, want 408 or a closed connection", start, res.StatusCode)
		}
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("%q: the server kept a stalled request open until the test's deadline", start)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "connection reset"):
	default:
		t.Fatalf("%q: reading the answer: %v", start, err)
	}
}

// `cairn hooks list` against `cairn dev` says the tokens are hidden, shows
// them with --show-tokens, and resuming by token works either way.
func TestHooksListAgainstDevHidesTokensUnlessShown(t *testing.T) {
	t.Parallel()
	for _, show := range []bool{false, true} {
		d := startTestDev(t, devOptions{serve: serveFlags{showTokens: show}})
		ctx := context.Background()
		run, err := workflow.Start(ctx, d.client, FulfilOrder{}, Order{ID: "ord-9", Items: []string{"tent"}, AmountCt: 100})
		if err != nil {
			t.Fatal(err)
		}
		token := warehouseToken(run.ID())
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := d.world.GetHookByToken(ctx, token); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the run created no warehouse hook")
			}
		}
		getenv := func(k string) string { return map[string]string{"CAIRN_URL": d.url + "/v1/workflow"}[k] }
		var out bytes.Buffer
		if err := hooksErr(ctx, []string{"list", "--run", run.ID(), "--no-sign"}, &out, getenv); err != nil {
			t.Fatalf("hooks list: %v", err)
		}
		if strings.Contains(out.String(), token) != show || strings.Contains(out.String(), "token hidden") == show || !strings.Contains(out.String(), "active") {
			t.Fatalf("--show-tokens %v, hooks list printed:\n%s", show, out.String())
		}
		out.Reset()
		if err := hooksErr(ctx, []string{"resume", token, "--no-sign", "--payload", `{"packer":"kim","boxes":1}`}, &out, getenv); err != nil {
			t.Fatalf("--show-tokens %v, hooks resume by token: %v", show, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = run.Result(wctx)
		cancel()
		if err != nil {
			t.Fatalf("run after resuming by token: %v", err)
		}
	}
}

// `cairn ui` guards its server the same way.
func TestUIRefusesRebinding(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"ui", "--db", db, "--addr", "127.0.0.1:0", "--allow-host", "ui.example"}, &stdout, &stderr)
	}()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; url = devURL.FindString(stdout.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stderr %q", stderr.String())
		}
		select {
		case c := <-code:
			t.Fatalf("ui exited %d early: %s", c, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, tc := range []struct {
		host   string
		status int
	}{{"evil.example", 403}, {"ui.example", 200}, {"localhost", 200}} {
		if status, body := request(t, "GET", url, "/api/runs", tc.host, "", nil); status != tc.status {
			t.Errorf("Host %s: %d %s, want %d", tc.host, status, body, tc.status)
		}
	}
	status, body := request(t, "POST", url, "/v1/workflow/rpc", "", `{"method":"runs.list","params":{}}`, map[string]string{"Content-Type": "text/plain"})
	if status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain RPC: %d %s", status, body)
	}
	cancel()
	if c := <-code; c != exitOK {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
}
