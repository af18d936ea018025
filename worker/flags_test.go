package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
	"github.com/tether-run/tether/internal/version"
)

// `tether-worker --help` and `--version` print and exit; they never
// start a worker (which would dial Temporal and open the store). Any
// other argument is a usage error.
func TestFlagsNeverStartAWorker(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		code, done := flags(args, &out, &errOut)
		assert.True(t, done, "%v exits before anything starts", args)
		assert.Equal(t, 0, code, "%v", args)
		assert.Empty(t, errOut.String())
	}
	var out bytes.Buffer
	_, _ = flags([]string{"--version"}, &out, &out)
	assert.Regexp(t, `^tether-worker \S+.* \(go1\.\d+`, out.String())
	out.Reset()
	_, _ = flags([]string{"--help"}, &out, &out)
	assert.Contains(t, out.String(), "Usage: tether-worker")
	assert.Contains(t, out.String(), "TEMPORAL_ADDRESS")

	for _, args := range [][]string{{"--bogus"}, {"start"}} {
		var errOut bytes.Buffer
		code, done := flags(args, &out, &errOut)
		assert.True(t, done)
		assert.Equal(t, 2, code, "%v", args)
		assert.Contains(t, errOut.String(), "Usage: tether-worker")
	}
	_, done := flags(nil, &out, &out)
	assert.False(t, done, "no argument: the worker starts")
}

// `make build` stamps the version and the commit into both binaries.
func TestMakeBuildStampsTheVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Unavailable(t, "make is not installed")
	}
	cmd := exec.Command("make", "-n", "build", "VERSION=v9.8.7", "COMMIT=0123456789abcdef0123456789abcdef01234567")
	cmd.Dir = testenv.Root()
	plan, err := cmd.Output()
	require.NoError(t, err)
	for _, bin := range []string{"bin/tether ./starter", "bin/tether-worker ./worker"} {
		var line string
		for _, l := range strings.Split(string(plan), "\n") {
			if strings.HasSuffix(l, bin) {
				line = l
			}
		}
		require.NotEmpty(t, line, "make build builds %s", bin)
		assert.Contains(t, line, "-X github.com/tether-run/tether/internal/version.Version=v9.8.7", line)
		assert.Contains(t, line, "-X github.com/tether-run/tether/internal/version.Commit=0123456789abcdef0123456789abcdef01234567", line)
	}
	// The variables those flags set are the ones the binaries print.
	version.Version, version.Commit = "v9.8.7", "0123456789abcdef0123456789abcdef01234567"
	t.Cleanup(func() { version.Version, version.Commit = "", "" })
	var out bytes.Buffer
	_, _ = flags([]string{"--version"}, &out, &out)
	assert.Contains(t, out.String(), "tether-worker v9.8.7 (commit 0123456789ab)")
}
