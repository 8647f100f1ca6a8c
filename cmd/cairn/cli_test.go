package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// `cairn`, `cairn help`, -h and --help print the command list and exit 0.
func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"help"}, {"-h"}, {"--help"}, {"-help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || errOut != "" {
			t.Errorf("cairn %v: exit %d, stderr %q", args, code, errOut)
		}
		for _, c := range commands {
			if !strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("cairn %v does not list %s:\n%s", args, c.name, out)
			}
		}
		if !strings.Contains(out, "Exit status") {
			t.Errorf("cairn %v does not document exit statuses:\n%s", args, out)
		}
	}
}

// Every command prints its usage for -h, --help and `cairn help NAME`, exits 0,
// and does nothing else: `cairn demo --help` does not run the demo, `cairn dev
// -h` opens no World file.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		db := filepath.Join(t.TempDir(), "x.db")
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {c.name, "-help"}, {"help", c.name}, {c.name, "--db", db, "--help"}} {
			if c.name == "help" && len(args) > 2 {
				continue
			}
			code, out, errOut := runCLI(t, args...)
			if code != exitOK || errOut != "" || out != c.usage+"\n" {
				t.Errorf("cairn %v: exit %d, stdout %q, stderr %q; want the usage and 0", args, code, out, errOut)
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("cairn %v touched the World file %s: %v", args, db, err)
			}
			if !strings.HasPrefix(c.usage, "usage: cairn "+c.name) {
				t.Errorf("usage of %s does not start with its synopsis: %q", c.name, c.usage)
			}
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"help", "a", "b"}, "at most one command"},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"version", "extra"}, `unexpected argument "extra"`},
		{[]string{"dev", "--nope"}, "-nope"},
		{[]string{"ui", "--nope"}, "-nope"},
		{[]string{"ui"}, "no World given"},
		{[]string{"inspect"}, "missing what to inspect"},
		{[]string{"inspect", "runs", "--limit", "x"}, "-limit"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("cairn %v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "cairn ") || strings.TrimSpace(out) == "cairn dev" {
		t.Fatalf("cairn version: exit %d, %q", code, out)
	}
	for _, tc := range []struct {
		name     string
		override string
		info     *debug.BuildInfo
		want     string
	}{
		{"ldflags", "v9.9.9", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v9.9.9"},
		{"go install", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"vcs", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-03T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "devel 0123456789ab+dirty (2026-12-03T10:00:00Z)"},
		{"nothing", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"no build info", "", nil, "devel"},
	} {
		if got := versionString(tc.override, tc.info); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
