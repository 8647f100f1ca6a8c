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
