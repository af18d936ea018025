package cli

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	code := Main([]string{"version"}, &out, &out)
	assert.Equal(t, ExitOK, code, out.String())
	assert.Regexp(t, regexp.MustCompile(`^tether \S.* \(go1\.\d+.*, temporal sdk \S+, checkpoint format 1\)\n$`), out.String())
	buildinfo.Version = "v9.9.9"
	t.Cleanup(func() { buildinfo.Version = "" })
	assert.Contains(t, versionLine(), "tether v9.9.9 (")
}
