// Package version is this build's version and the commit it was built
// from, read by both binaries (`tether version`, `tether-worker
// --version`). `make build` stamps them with -ldflags -X (the Makefile's
// VERSION and COMMIT); a plain `go build` or `go install` leaves them
// empty, and Get falls back on what the Go toolchain recorded.
package version

import (
	"runtime/debug"
	"strings"
)

// Stamped at build time:
//
//	-ldflags "-X github.com/tether-run/tether/internal/version.Version=v1.2.3
//	          -X github.com/tether-run/tether/internal/version.Commit=0123abcd…"
var (
	Version = ""
	Commit  = ""
)

// Info is what a binary says of its build.
type Info struct {
	// Version is the release (v1.2.3, or `git describe` of a build
	// between releases), "(devel)" when nothing says.
	Version string
	// Commit is the full commit hash, "" when unknown.
	Commit string
	// Dirty says the build's tree had changes the commit does not hold.
	Dirty bool
}

// Get is this build's version: the stamped one, else the module version
// or VCS revision the toolchain recorded, else "(devel)".
func Get() Info {
	in := Info{Version: Version, Commit: Commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && in.Commit == "":
				in.Commit = s.Value
			case s.Key == "vcs.modified" && s.Value == "true" && Commit == "":
				in.Dirty = true
			}
		}
	}
	if strings.HasSuffix(in.Version, "-dirty") {
		in.Dirty = true
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	return in
}

// String is the version with its commit in brief:
// "v1.2.3 (commit 0123456789ab)".
func (in Info) String() string {
	s := in.Version
	if c := in.Commit; c != "" {
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (commit " + c
		if in.Dirty && !strings.HasSuffix(in.Version, "-dirty") {
			s += ", with changes"
		}
		s += ")"
	}
	return s
}

// SDK is the version of the Temporal Go SDK the binary links, "unknown"
// when the toolchain recorded none.
func SDK() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "go.temporal.io/sdk" {
				return dep.Version
			}
		}
	}
	return "unknown"
}
