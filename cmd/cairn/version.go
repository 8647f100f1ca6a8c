package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// version overrides the build information when set at build time with
// -ldflags "-X main.version=v1.2.3".
var version string

const versionUsage = `usage: cairn version
  Prints the version of this binary: the module version when it was installed
  with go install (cairn v1.2.3), else the VCS revision it was built from.`

func versionCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := noArgs("version", versionUsage, args, stderr); stop {
		return code
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, "cairn", versionString(version, info))
	return exitOK
}

// versionString is the version to print: the -ldflags override, the main
// module's version (set by go install m@v), or the VCS revision and time the
// binary was built from (with "+dirty" for uncommitted changes), else "devel".
func versionString(override string, info *debug.BuildInfo) string {
	if override != "" {
		return override
	}
	if info == nil {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := "devel " + rev + dirty
	if at != "" {
		out += " (" + at + ")"
	}
	return out
}
