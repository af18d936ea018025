// Package buildinfo says which build of Tether this binary is: its version
// and source revision, stamped by the Makefile (go build -ldflags -X), and
// the build id a versioned worker registers with Temporal's worker
// deployments. Two binaries get the same build id only when they were
// built from the same clean revision, so a run pinned to a build id never
// meets workflow code other than the code it started on.
package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
)

// Stamped by the Makefile:
//
//	-X github.com/tether-run/tether/internal/buildinfo.Version=v1.2.3
//	-X github.com/tether-run/tether/internal/buildinfo.Revision=<git sha>
//	-X github.com/tether-run/tether/internal/buildinfo.Dirty=true
//
// Version is a release tag or `git describe`; Revision the commit; Dirty
// "true" when the tree had changes the commit does not hold.
var (
	Version  = ""
	Revision = ""
	Dirty    = ""
)

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the stamped version, else the module's, else "(devel)".
	Version string
	// Revision is the source commit, when known; Modified says the tree
	// had uncommitted changes.
	Revision string
	Modified bool
	// SDK is the Temporal Go SDK the binary links.
	SDK string
	// Tags are the build tags it was built with (go build -tags).
	Tags string
}

// Read returns the binary's build information: the Makefile's stamps
// first, then what the Go toolchain recorded (go build with VCS stamping).
func Read() Info {
	i := Info{Version: Version, Revision: Revision, Modified: Dirty == "true", SDK: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && i.Revision == "":
				i.Revision = s.Value
			case s.Key == "vcs.modified" && Revision == "":
				i.Modified = s.Value == "true"
			case s.Key == "-tags":
				i.Tags = s.Value
			}
		}
		for _, dep := range bi.Deps {
			if dep.Path == "go.temporal.io/sdk" {
				i.SDK = dep.Version
			}
		}
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	return i
}

// Short is the version as people read it: the version, and the revision's
// first 12 digits when the version does not already name the commit.
func (i Info) Short() string {
	v := i.Version
	if rev := short(i.Revision); rev != "" && !strings.Contains(v, rev[:7]) {
		v += " " + rev
	}
	if i.Modified {
		v += " (modified)"
	}
	if i.Tags != "" {
		v += " (tags " + i.Tags + ")"
	}
	return v
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// BuildID is the build id a versioned worker registers by default
// (TETHER_BUILD_ID overrides it): the version and the revision's first 12
// digits, e.g. "v1.2.3-3b88009a1b2c". A binary built from a tree with
// changes, or without a known revision (go test, a plain go build), adds
// the first digits of its own executable's SHA-256, and one built with
// build tags adds them ("+tag"), so two different binaries never share a
// build id.
func BuildID() string { return buildID() }

var buildID = sync.OnceValue(func() string {
	i := Read()
	id := i.Version
	if id == "(devel)" {
		id = "dev"
	}
	if rev := short(i.Revision); rev != "" && !strings.Contains(id, rev[:7]) {
		id += "-" + rev
	}
	if i.Revision == "" || i.Modified {
		id += "-" + executableDigest()
	}
	if i.Tags != "" {
		// Another build of the same source: tags change the code.
		id += "+" + strings.ReplaceAll(i.Tags, ",", ".")
	}
	return SanitizeBuildID(id)
})

// executableDigest is the first 12 hex digits of the SHA-256 of the running
// binary, or "unknown" when it cannot be read.
func executableDigest() string {
	path, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

var unsafeInID = regexp.MustCompile(`[^A-Za-z0-9._+-]+`)

// SanitizeBuildID makes s a build id Temporal and Tether accept: the
// characters of ValidBuildID, at most MaxBuildID long.
func SanitizeBuildID(s string) string {
	s = strings.Trim(unsafeInID.ReplaceAllString(s, "_"), "_")
	if len(s) > MaxBuildID {
		s = s[:MaxBuildID]
	}
	if s == "" {
		s = "dev"
	}
	return s
}

// MaxBuildID bounds a build id (Temporal's limit is 255 bytes).
const MaxBuildID = 128

var validBuildID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// ValidBuildID reports whether s can be a build id: letters, digits, '.',
// '_', '+' and '-', starting with a letter or digit, at most MaxBuildID
// bytes. (No ':', which Temporal's BuildIds search attribute uses as its
// separator.)
func ValidBuildID(s string) bool {
	return len(s) <= MaxBuildID && validBuildID.MatchString(s)
}

var validDeployment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_/-]*$`)

// ValidDeployment reports whether s can name a worker deployment: letters,
// digits, '_', '-' and '/' (the Temporal Worker Controller names one
// "<name>/<kubernetes namespace>"; Temporal refuses '.' and ':'), at most
// 100 bytes.
func ValidDeployment(s string) bool {
	return len(s) <= 100 && validDeployment.MatchString(s)
}
