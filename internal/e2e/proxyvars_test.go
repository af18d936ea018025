package e2e

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/backend"
	"github.com/tether-run/tether/internal/backend/clitest"
	"github.com/tether-run/tether/internal/fakemodel"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
	"github.com/tether-run/tether/internal/testenv"
)

// honoursProxyVars records which CLIs send their model traffic through
// the standard proxy variables (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) when
// nothing else reaches their endpoint. The others reach an exact endpoint
// through the sandbox's relay, which every test of a confined CLI uses
// (docs/security.md, "Network").
var honoursProxyVars = map[string]bool{
	"claude_code": true,
	"codex":       true,
	"pi":          true,
	"gemini":      true,
	"grok":        false,
	"opencode":    true,
}

// TestWhichCLIsHonourTheProxyVariables puts each CLI's model at an
// address of this machine that only the egress proxy reaches: no relay
// listens for it inside the sandbox and the sandbox has no route to it.
// A CLI that honours the proxy variables gets its answer; one that does
// not fails to connect, and is recorded in honoursProxyVars as such (it
// still works through its relay, see the real-CLI suites).
func TestWhichCLIsHonourTheProxyVariables(t *testing.T) {
	addr := outsideAddr(t)
	bin := clitest.Isolate(t)
	fake := fakemodel.Start(t)
	fwd := forward(t, addr, strings.TrimPrefix(fake.URL(), "http://"))
	url := "http://" + fwd
	bs, err := backend.New(backend.Config{
		CLIBin: bin, Vars: clitest.VarsAt(url),
		TempDir: t.TempDir(), Sandbox: sandboxtest.New(t),
	})
	require.NoError(t, err)
	for _, b := range bs {
		want, ok := honoursProxyVars[b.Name()]
		if !ok {
			continue
		}
		t.Run(b.Name(), func(t *testing.T) {
			fake.Reset()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := b.Execute(ctx, agent.Request{Prompt: "alpha", Env: clitest.NewEnv(t)})
			reached := err == nil && strings.Contains(res.Text, "alpha") && len(fake.Requests()) > 0
			t.Logf("%s through the proxy variables: reached=%v err=%v", b.Name(), reached, err)
			assert.Equal(t, want, reached, "%s honours the proxy variables: want %v", b.Name(), want)
		})
	}
}

// outsideAddr is a non-loopback address of this machine, which a
// sandbox's own network has no route to.
func outsideAddr(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr().String()
		}
	}
	testenv.Unavailable(t, "this machine has no non-loopback IPv4 address")
	return ""
}

// forward listens on host:0 and carries every connection to target.
func forward(t *testing.T, host, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return l.Addr().String()
}
