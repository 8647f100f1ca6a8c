package repocheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// machinePath matches absolute paths that exist only on some machine: home
// directories, a workspace mount, a local provider mirror, an installed
// terraform binary. The pattern is assembled from pieces so this file does not
// match itself.
var machinePath = regexp.MustCompile(strings.Join([]string{
	`/` + `work/`,
	`/` + `root/`,
	`/` + `home/[a-z_][a-z0-9_-]*/`,
	`/` + `Users/[A-Za-z]`,
	`[A-Z]:\\` + `Users\\`,
	`/` + `opt/tf-plugins`,
	`/usr/local/bin/` + `terraform`,
	`/` + `devenv\b`,
}, "|"))

// repoRoot returns the top of the git checkout holding this package, or skips
// when there is none (the module unpacked from the module cache).
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && bytes.Contains(ee.Stderr, []byte("not a git repository")) {
			t.Skip("not in a git checkout")
		}
		t.Fatalf("git rev-parse: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Docs, scripts and code speak to users on their machines: no tracked file names
// a path of the machine it was written on.
func TestNoMachineSpecificPaths(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	checked := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || strings.HasSuffix(name, "go.sum") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			if m := machinePath.FindString(line); m != "" {
				t.Errorf("%s:%d: machine-specific path %q: %s", name, i+1, m, strings.TrimSpace(line))
			}
		}
	}
	if checked == 0 {
		t.Fatal("git ls-files listed no readable files")
	}
}

func TestPatternMatches(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"/" + "work/main/x", "cd /" + "root/go", "/" + "home/ada/src", "/" + "Users/ada", `C:\` + `Users\ada`, "/" + "opt/tf-plugins", "/" + "devenv go test"} {
		if !machinePath.MatchString(s) {
			t.Errorf("%q is not flagged", s)
		}
	}
	for _, s := range []string{"/usr/local/go/bin", "/v1/workflow/rpc", "./scripts/test", "homework/", "/api/runs", "/usr/bin/chromium"} {
		if machinePath.MatchString(s) {
			t.Errorf("%q is flagged", s)
		}
	}
}
