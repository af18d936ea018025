package version

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

// BuildID is the build id a versioned worker registers with its Temporal
// worker deployment by default (TETHER_BUILD_ID overrides it): the
// version and the commit's first 12 digits, e.g. "v1.2.3-3b88009a1b2c"
// (nothing added when the version already names the commit, as `git
// describe` does between releases). A binary built from a tree with
// changes, or without a known commit (go test, a plain go build), adds
// the first digits of its own executable's SHA-256, and one built with
// build tags adds them ("+tag"), so two different binaries never share a
// build id: a run pinned to one never meets workflow code other than the
// code it started on.
func BuildID() string { return buildID() }

var buildID = sync.OnceValue(func() string {
	in := Get()
	id := in.Version
	if id == "(devel)" {
		id = "dev"
	}
	if c := brief(in.Commit); c != "" && !strings.Contains(id, c[:min(7, len(c))]) {
		id += "-" + c
	}
	if in.Commit == "" || in.Dirty {
		id += "-" + executableDigest()
	}
	if tags := buildTags(); tags != "" {
		// Another build of the same source: tags change the code.
		id += "+" + strings.ReplaceAll(tags, ",", ".")
	}
	return SanitizeBuildID(id)
})

// brief is a commit's first 12 digits.
func brief(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// buildTags are the tags the binary was built with (go build -tags).
func buildTags() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}

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
