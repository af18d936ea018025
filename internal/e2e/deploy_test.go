package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// The compose topology cannot run here (no container engine), so this test
// keeps it honest another way: it parses, it has the services the README
// promises, the workers get the settings the worker reads, and the image
// installs the CLI versions the tests ran against.
func TestDeployFilesAgreeWithTheCode(t *testing.T) {
	root := testenv.Root()
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string         `yaml:"image"`
			Build       any            `yaml:"build"`
			Environment map[string]any `yaml:"environment"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	for _, s := range []string{"postgresql", "temporal", "temporal-ui", "s3", "worker", "tether"} {
		assert.Contains(t, compose.Services, s)
	}
	w := compose.Services["worker"]
	assert.NotNil(t, w.Build)
	for _, k := range []string{"TEMPORAL_ADDRESS", "TETHER_BLOB_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "TETHER_CHECKPOINT_KEY"} {
		assert.Contains(t, w.Environment, k)
	}
	assert.Regexp(t, `^s3://[a-z0-9-]+/[a-z0-9-]+\?endpoint=http://s3:7070&`, w.Environment["TETHER_BLOB_URL"])
	assert.Equal(t, "versity/versitygw:v1.8.0", compose.Services["s3"].Image)

	tools, err := os.ReadFile(filepath.Join(root, "scripts", "tools.sh"))
	require.NoError(t, err)
	docker, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	for _, pin := range []struct{ variable, pkg string }{
		{"CLAUDE_CODE_VERSION", "@anthropic-ai/claude-code"},
		{"CODEX_VERSION", "@openai/codex"},
		{"PI_VERSION", "@mariozechner/pi-coding-agent"},
	} {
		m := regexp.MustCompile(pin.variable + `=(\S+)`).FindSubmatch(tools)
		require.NotNil(t, m, pin.variable)
		assert.Contains(t, string(docker), pin.pkg+"@"+string(m[1]), "Dockerfile and scripts/tools.sh pin the same %s", pin.pkg)
	}
}
