package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/cli"
	"github.com/cairn-go/cairn/workflow"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var devURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

func TestDevCommandServesAndStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	db := filepath.Join(t.TempDir(), "dev.db")
	go func() { code <- run(ctx, []string{"dev", "--addr", "127.0.0.1:0", "--db", db}, &stdout, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	var url string
	for url == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		select {
		case c := <-code:
			t.Fatalf("dev exited %d early: %s", c, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		url = devURL.FindString(stdout.String())
	}
	for _, p := range []string{"/", "/api/workflows"} {
		res, err := http.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || (p == "/api/workflows" && !strings.Contains(string(b), "demo.FulfilOrder")) {
			t.Fatalf("GET %s: %d %s", p, res.StatusCode, b)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d: %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dev did not stop when its context ended")
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("World file not written: %v", err)
	}
}

func TestDevBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	future := filepath.Join(dir, "future.db")
	writeFutureWorld(t, future)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--port", "1"}, 2, "flag provided but not defined"},
		{"extra argument", []string{"now"}, 2, `unexpected argument "now"`},
		{"negative packing", []string{"--packing", "-1s"}, 2, "--packing"},
		{"bad address", []string{"--addr", "nowhere:xyz", "--db", filepath.Join(dir, "a.db")}, 1, "--addr nowhere:xyz"},
		{"missing directory", []string{"--db", filepath.Join(dir, "no", "such", "x.db")}, 1, "does not exist"},
		{"other version", []string{"--db", future}, 1, "written by another version of cairn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCLI(t, append([]string{"dev"}, tc.args...)...)
			first, _, _ := strings.Cut(errOut, "\n")
			if code != tc.code || !strings.HasPrefix(first, "cairn dev: ") || !strings.Contains(first, tc.want) {
				t.Fatalf("exit %d (want %d), stderr %q, want a first line naming %q", code, tc.code, errOut, tc.want)
			}
			if strings.Contains(errOut, "goroutine ") {
				t.Fatalf("stack trace on stderr: %s", errOut)
			}
		})
	}
}

// A hook created under `cairn dev` has a webhook URL on the dev server itself,
// and posting to that URL resumes the run.
func TestDevHookURLResumesTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := startDev(ctx, devOptions{addr: "127.0.0.1:0", db: filepath.Join(t.TempDir(), "dev.db")}, cli.NewProgress(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	run, err := workflow.Start(ctx, d.client, FulfilOrder{}, Order{ID: "ord-7", Items: []string{"tent"}, AmountCt: 100})
	if err != nil {
		t.Fatal(err)
	}
	token := warehouseToken(run.ID())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := d.world.GetHookByToken(ctx, token); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run created no warehouse hook")
		}
		time.Sleep(20 * time.Millisecond)
	}
	url, ok := d.world.WebhookURL(token)
	if !ok || !strings.HasPrefix(url, d.url+"/v1/workflow/webhooks/") {
		t.Fatalf("webhook URL %q, %v; want one under %s/v1/workflow/webhooks/", url, ok, d.url)
	}
	res, err := http.Post(url, "application/json", strings.NewReader(`{"packer":"kim","boxes":1}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d", url, res.StatusCode)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := run.Result(wctx); err != nil {
		t.Fatalf("run after the webhook: %v", err)
	}
}
