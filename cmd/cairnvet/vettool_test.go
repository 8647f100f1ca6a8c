package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGoVetVettool builds cairnvet and runs it the way users do, through
// go vet -vettool, which speaks the unitchecker protocol: go vet asks the tool for
// its version and flags, then runs it once per package with a .cfg file.
func TestGoVetVettool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairnvet and runs go vet")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	bin := filepath.Join(t.TempDir(), "cairnvet")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	vet := func(t *testing.T, pattern string) (string, error) {
		t.Helper()
		cmd := exec.Command(goTool, "vet", "-vettool="+bin, pattern)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	t.Run("example is clean", func(t *testing.T) {
		out, err := vet(t, "./examples/workflow/...")
		if err != nil || out != "" {
			t.Fatalf("go vet -vettool on examples/workflow: %v\n%s", err, out)
		}
	})

	t.Run("findings", func(t *testing.T) {
		out, err := vet(t, "./cmd/cairnvet/testdata/vet")
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("go vet: want a non-zero exit for findings, got %v\n%s", err, out)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(line, "#") {
				continue // the package header go vet prints
			}
			got = append(got, strings.TrimPrefix(filepath.ToSlash(line), "cmd/cairnvet/testdata/vet/"))
		}
		want := []string{
			"bad.go:34:2: time.Sleep in workflow code blocks the delivery and does not survive a restart: use workflow.Sleep",
			"bad.go:47:17: range over a map in workflow code visits keys in a different order on each replay: sort the keys (slices.Sorted(maps.Keys(m))) (reached from Report.Run)",
			"bad.go:50:2: go statement in workflow code: start parallel steps with workflow.Go (reached from Report.Run)",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("go vet output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
