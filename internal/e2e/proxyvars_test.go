package e2e

import (
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
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

// TestModelOnlyTheWorkerReaches puts each CLI's model at an address of
// this machine that no sandbox has a route to and no node allows: every
// CLI still holds its conversation, since its model calls go to the
// worker's model relay on the sandbox's loopback (plain HTTP, which the
// sandbox's NO_PROXY keeps off the egress proxy), and the relay, not the
// sandbox, reaches the model. Before the relay, this is where the CLIs
// that ignore the proxy variables (grok) failed.
func TestModelOnlyTheWorkerReaches(t *testing.T) {
	addr := outsideAddr(t)
	bin := clitest.Isolate(t)
	fake := fakemodel.Start(t)
	fwd := forward(t, addr, strings.TrimPrefix(fake.URL(), "http://"))
	url := "http://" + fwd
	bs, err := backend.New(backend.Config{
		CLIBin: bin, Vars: clitest.VarsAt(url, fake.Key()),
		TempDir: t.TempDir(), Sandbox: sandboxtest.New(t),
	})
	require.NoError(t, err)
	ran := 0
	for _, b := range bs {
		if !slices.Contains(clitest.CLIBackends(false), b.Name()) {
			continue
		}
		ran++
		t.Run(b.Name(), func(t *testing.T) {
			fake.Reset()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			res, err := b.Execute(ctx, agent.Request{Prompt: "alpha", Env: clitest.NewEnv(t)})
			require.NoError(t, err)
			// (grok's prompt carries the ask_user convention after it.)
			assert.True(t, strings.HasPrefix(res.Text, "turn 1: alpha"), res.Text)
			assert.NotEmpty(t, fake.Turns())
			assert.Empty(t, fake.Refused(), "every call carried the real key")
		})
	}
	assert.Equal(t, len(clitest.CLIBackends(false)), ran)
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
