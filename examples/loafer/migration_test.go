// Package loafer_test checks the programs under examples/loafer: they are
// written as a loafer-awsx user writes programs, with cairn's import path, so
// they may use nothing of cairn beyond the packages loafer-awsx has.
package loafer_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const cairnMessaging = "github.com/cairn-go/cairn/messaging/"

// loaferPackages are loafer-awsx's packages.
var loaferPackages = map[string]bool{
	"broker": true, "client": true, "conn": true, "consumer": true, "errors": true, "idgen": true,
	"logger": true, "middleware": true, "producer": true, "router": true, "typed": true,
}

var programs = []string{"handler", "publish", "fifo", "scheduledretry", "snsfanout", "typed"}

// TestOnlySeedPackages: with cairn's import path swapped for loafer-awsx's,
// every import of every program exists in loafer-awsx.
func TestOnlySeedPackages(t *testing.T) {
	t.Parallel()
	for _, p := range programs {
		files, err := filepath.Glob(filepath.Join(p, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", p, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if !strings.HasPrefix(path, "github.com/cairn-go/") {
					continue
				}
				if !strings.HasPrefix(path, cairnMessaging) || !loaferPackages[strings.TrimPrefix(path, cairnMessaging)] {
					t.Errorf("%s imports %s, which loafer-awsx does not have", f, path)
				}
			}
		}
	}
}

// TestProgramsBuild builds every program as a user would.
func TestProgramsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries")
	}
	t.Parallel()
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	out := t.TempDir()
	for _, p := range programs {
		cmd := exec.Command(gobin, "build", "-o", filepath.Join(out, p), "./"+p)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go build ./%s: %v\n%s", p, err, b)
		}
	}
}
