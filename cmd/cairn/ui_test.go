package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `cairn ui --db` serves the web UI, its API and the RPC endpoint over a World
// file another process wrote, and stops when its context ends.
func TestUIServesExistingWorld(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"ui", "--db", db, "--addr", "127.0.0.1:0"}, &stdout, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	var url string
	for url == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		select {
		case c := <-code:
			t.Fatalf("ui exited %d early: %s", c, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		url = devURL.FindString(stdout.String())
	}
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/", "", "assets/app.js"},
		{"GET", "/api/runs", "", `"runId":"run-ok"`},
		{"GET", "/api/runs/run-ok", "", `"runnable":true`},
		{"POST", "/v1/workflow/rpc", `{"method":"runs.get","params":{"runId":"run-ok"}}`, `"runId":"run-ok"`},
	} {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
			t.Fatalf("%s %s: %d %s, want %s", tc.method, tc.path, res.StatusCode, b, tc.want)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != exitOK {
			t.Fatalf("exit %d: %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ui did not stop when its context ended")
	}
}

func TestUIBadWorld(t *testing.T) {
	t.Parallel()
	code, _, errOut := runCLI(t, "ui", "--db", filepath.Join(t.TempDir(), "missing.db"))
	if code != exitError || !strings.Contains(errOut, "no World file at") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "ui", "--aws", "--table", "t")
	if code != exitError || !strings.Contains(errOut, "no queue") && !strings.Contains(errOut, "no region") {
		t.Fatalf("exit %d, stderr %q: want the missing queue or region named", code, errOut)
	}
}
