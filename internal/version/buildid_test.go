package version

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A test binary has no stamped revision: its build id carries its own
// digest, and reads the same every time; what it says is a build id
// Temporal takes.
func TestBuildIDOfAnUnstampedBinary(t *testing.T) {
	id := BuildID()
	assert.Regexp(t, regexp.MustCompile(`^dev-[0-9a-f]{12}|^dev-.*-[0-9a-f]{12}`), id)
	assert.Equal(t, id, BuildID())
	assert.True(t, ValidBuildID(id), id)
}

func TestBuildIDsAndDeploymentNames(t *testing.T) {
	for _, ok := range []string{"v1.2.3-3b88009a1b2c", "dev-3b88009a1b2c+tether_upgrade_probe", "5f9c2d"} {
		assert.True(t, ValidBuildID(ok), ok)
	}
	for _, bad := range []string{"", "v1:2", "-v1", "a b", string(make([]byte, MaxBuildID+1))} {
		assert.False(t, ValidBuildID(bad), bad)
	}
	assert.Equal(t, "v1.2_3_beta", SanitizeBuildID("v1.2 3:beta"))
	assert.Equal(t, "dev", SanitizeBuildID("::"))
	assert.True(t, ValidDeployment("tether/agents"))
	assert.False(t, ValidDeployment("tether.prod"))
	assert.False(t, ValidDeployment("tether:prod"))
}
