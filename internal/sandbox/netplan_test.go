package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/hostport"
)

// Each exact host:port gets a relay the sandbox reaches it by: a loopback
// address as itself, localhost on both loopbacks, a name on a loopback
// address of its own that /etc/hosts gives it; wildcards and other
// addresses go through the proxy only, which never shares a relay's port.
func TestPlanNetwork(t *testing.T) {
	n := planNetwork(hostport.MustParsePatterns("127.0.0.1:3128", "api.example.com:443", "api.example.com:8443", "localhost:11434",
		"other.example.com:443", "*.example.org:443", "10.0.0.5:80", "[::1]:9000", "127.0.0.1:3128"))
	assert.Equal(t, []relay{
		{"127.0.0.1:3128", "127.0.0.1:3128"},
		{"127.0.0.2:443", "api.example.com:443"},
		{"127.0.0.2:8443", "api.example.com:8443"},
		{"127.0.0.1:11434", "localhost:11434"},
		{"[::1]:11434", "localhost:11434"},
		{"127.0.0.3:443", "other.example.com:443"},
		{"[::1]:9000", "[::1]:9000"},
	}, n.relays)
	assert.Equal(t, []hostEntry{{"127.0.0.2", "api.example.com"}, {"127.0.0.3", "other.example.com"}}, n.hosts)
	assert.Equal(t, "127.0.0.1:3129", n.proxy, "the proxy moves off a relay's port")
	assert.Contains(t, n.env(), "HTTPS_PROXY=http://127.0.0.1:3129")
	assert.Contains(t, n.env(), "NO_PROXY=localhost,127.0.0.1,::1")
	assert.Equal(t, []string{"A=1"}, withoutProxyVars([]string{"HTTPS_PROXY=http://corp:8080", "A=1", "no_proxy=x"}), "the worker's own proxy settings never reach the sandbox")
}
