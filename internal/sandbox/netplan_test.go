package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tether-run/tether/internal/hostport"
	"github.com/tether-run/tether/internal/sandbox/confine"
)

// Each exact host:port gets a relay the sandbox reaches it by: a loopback
// address as itself, localhost on both loopbacks, a name on a loopback
// address of its own that /etc/hosts gives it; wildcards and other
// addresses go through the proxy only, which never shares a relay's port.
func TestPlanNetwork(t *testing.T) {
	n := planNetwork(hostport.MustParsePatterns("127.0.0.1:3128", "api.example.com:443", "api.example.com:8443", "localhost:11434",
		"other.example.com:443", "*.example.org:443", "10.0.0.5:80", "[::1]:9000", "127.0.0.1:3128"), "127.0.0.1:3129", false)
	assert.Equal(t, []confine.Relay{
		{Listen: "127.0.0.1:3128", Target: "127.0.0.1:3128"},
		{Listen: "127.0.0.2:443", Target: "api.example.com:443"},
		{Listen: "127.0.0.2:8443", Target: "api.example.com:8443"},
		{Listen: "127.0.0.1:11434", Target: "localhost:11434"},
		{Listen: "[::1]:11434", Target: "localhost:11434"},
		{Listen: "127.0.0.3:443", Target: "other.example.com:443"},
		{Listen: "[::1]:9000", Target: "[::1]:9000"},
	}, n.relays)
	assert.Equal(t, []hostEntry{{"127.0.0.2", "api.example.com"}, {"127.0.0.3", "other.example.com"}}, n.hosts)
	assert.Equal(t, "127.0.0.1:3130", n.proxy, "the proxy moves off a relay's port and the model relay's")
	assert.Contains(t, n.env(), "HTTPS_PROXY=http://127.0.0.1:3130")
	var a confine.Args
	n.apply(&a)
	assert.Equal(t, confine.Args{Socket: EgressSocket, Proxy: "127.0.0.1:3130", Relays: n.relays, ModelSocket: ModelSocket, Model: "127.0.0.1:3129"}, a)
	assert.Contains(t, n.env(), "NO_PROXY=localhost,127.0.0.1,::1")
	assert.Equal(t, []string{"A=1"}, withoutProxyVars([]string{"HTTPS_PROXY=http://corp:8080", "A=1", "no_proxy=x"}), "the worker's own proxy settings never reach the sandbox")
}

// The model relay listens on 127.0.0.1 (which NO_PROXY keeps direct), off
// every exact loopback endpoint the node allows; without an allowlist the
// plan is the model relay alone: no proxy, no proxy variables.
func TestModelListen(t *testing.T) {
	assert.Equal(t, "127.0.0.1:3127", ModelListen(nil))
	assert.Equal(t, "127.0.0.1:3127", ModelListen(hostport.MustParsePatterns("api.example.com:3127", "127.0.0.2:3127", "*:3127")))
	assert.Equal(t, "127.0.0.1:3129", ModelListen(hostport.MustParsePatterns("127.0.0.1:3127", "localhost:3128")))
	args := func(n netPlan) confine.Args {
		var a confine.Args
		n.apply(&a)
		return a
	}
	n := planNetwork(nil, "127.0.0.1:3127", false)
	assert.Equal(t, confine.Args{ModelSocket: ModelSocket, Model: "127.0.0.1:3127"}, args(n))
	assert.Empty(t, n.env())
	assert.Equal(t, confine.Args{}, args(planNetwork(nil, "", false)))
	// An agent's proxy with nothing allowed: every request refused, and noted.
	n = planNetwork(nil, "127.0.0.1:3127", true)
	assert.Equal(t, confine.Args{Socket: EgressSocket, Proxy: "127.0.0.1:3128", ModelSocket: ModelSocket, Model: "127.0.0.1:3127"}, args(n))
	assert.Contains(t, n.env(), "HTTPS_PROXY=http://127.0.0.1:3128")
}
