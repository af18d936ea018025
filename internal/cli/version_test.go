package cli

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/version"
)

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	code := Main([]string{"version"}, &out, &out)
	assert.Equal(t, ExitOK, code, out.String())
	assert.Regexp(t, regexp.MustCompile(`^tether \S.* \(go1\.\d+.*, temporal sdk \S+, checkpoint format 1\)\n$`), out.String())
	version.Version, version.Commit = "v9.9.9", "0123456789abcdef0123456789abcdef01234567"
	t.Cleanup(func() { version.Version, version.Commit = "", "" })
	assert.Contains(t, versionLine(), "tether v9.9.9 (commit 0123456789ab) (go1.")
}
