package main

import (
	"bytes"
	"errors"
	"os"
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
	vet := func(t *testing.T, pattern string, env ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(goTool, "vet", "-vettool="+bin, pattern)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
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

	// The findings in testdata/vet: the step literal's I/O, the named step and the
	// directive's line are not among them.
	want := []string{
		"bad.go:34:2: time.Sleep in workflow code blocks the delivery and does not survive a restart: use workflow.Sleep",
		"bad.go:47:17: range over a map in workflow code visits keys in a different order on each replay: sort the keys (slices.Sorted(maps.Keys(m))) (reached from Report.Run)",
		"bad.go:50:2: go statement in workflow code: start parallel steps with workflow.Go (reached from Report.Run)",
	}
	findings := func(out string) string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(line, "#") {
				continue // the package header go vet prints
			}
			line = filepath.ToSlash(line)
			got = append(got, line[strings.LastIndex(line, "/")+1:])
		}
		return strings.Join(got, "\n")
	}

	t.Run("findings", func(t *testing.T) {
		out, err := vet(t, "./cmd/cairnvet/testdata/vet")
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("go vet: want a non-zero exit for findings, got %v\n%s", err, out)
		}
		if got := findings(out); got != strings.Join(want, "\n") {
			t.Errorf("go vet output:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
		}
	})

	// A durable function against the real durable package, a module of its own
	// that the root module imports only through go.work: the step and the
	// WaitForCallback submitter do I/O, which is not among the findings.
	t.Run("durable findings", func(t *testing.T) {
		// The repository's go.work, even where the tests run with GOWORK=off.
		work := filepath.Join(root, "go.work")
		if _, err := os.Stat(work); err != nil {
			t.Skip("package durable resolves only through the repository's go.work:", err)
		}
		// Workspace mode refuses -mod=mod, which the test command sets.
		var flags []string
		for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
			if !strings.HasPrefix(f, "-mod=") {
				flags = append(flags, f)
			}
		}
		out, err := vet(t, "./cmd/cairnvet/testdata/vetdurable", "GOWORK="+work, "GOFLAGS="+strings.Join(flags, " "))
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("go vet: want a non-zero exit for findings, got %v\n%s", err, out)
		}
		want := strings.Join([]string{
			"bad.go:34:2: time.Sleep in durable code blocks the invocation and does not survive a suspension: use dc.Wait",
			"bad.go:42:20: range over a map in durable code visits keys in a different order on each replay: sort the keys (slices.Sorted(maps.Keys(m))) (reached from Order)",
		}, "\n")
		if got := findings(out); got != want {
			t.Errorf("go vet output:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("standalone", func(t *testing.T) {
		cmd := exec.Command(bin, "./cmd/cairnvet/testdata/vet")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("cairnvet: want exit status 3 for findings, got %v\n%s", err, out)
		}
		if got := findings(string(out)); got != strings.Join(want, "\n") {
			t.Errorf("cairnvet output:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
		}
	})
}
