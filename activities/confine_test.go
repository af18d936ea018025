package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/sandbox"
	"github.com/tether-run/tether/internal/sandbox/sandboxtest"
)

// A worker that has Landlock but no namespaces refuses a node whose
// network setting or permissions: full it cannot honour, with a typed,
// final error; TETHER_SANDBOX=off (no sandbox) runs it.
func TestWorkerWithoutNamespacesRefusesWhatItCannotConfine(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.Sandbox = &sandbox.Sandbox{Level: sandbox.LevelLandlock, Why: errors.New("user namespaces are not allowed here")}
	for _, n := range []graph.Node{
		{ID: "fetch", Kind: graph.KindTool, Run: []string{"true"}, Network: &graph.Network{Allow: []string{"proxy.golang.org:443"}}},
		{ID: "agent", Kind: graph.KindAgent, Backend: "scripted", Permissions: "full"},
	} {
		_, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: n.ID, Visit: 1, Node: n})
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr, n.ID)
		assert.Equal(t, ErrTypeSandboxRefused, appErr.Type())
		assert.True(t, appErr.NonRetryable())
		assert.Contains(t, err.Error(), "user namespaces are not allowed here")
		assert.Contains(t, err.Error(), "TETHER_SANDBOX=off")
	}
	plain := graph.Node{ID: "plain", Kind: graph.KindTool, Run: []string{"true"}}
	a.Sandbox = nil
	_, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "fetch", Visit: 1,
		Node: graph.Node{ID: "fetch", Kind: graph.KindTool, Run: []string{"true"}, Network: &graph.Network{Allow: []string{"proxy.golang.org:443"}}}})
	assert.NoError(t, err, "with the sandbox off, it runs")
	_, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "plain", Visit: 1, Node: plain})
	assert.NoError(t, err)
}

// A tool node reaches a server its allowlist names, and without it not;
// what was refused is on its output.
func TestToolNetworkAllowlist(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "REACHED-THE-SITE") }))
	t.Cleanup(site.Close)
	addr := site.Listener.Addr().String()
	a := newActs(t, blob.NewMem())
	a.Sandbox = sandboxtest.New(t)
	fetch := []string{"/bin/sh", "-c", "curl -s -m 10 http://" + addr + "/ || echo unreachable; curl -s -m 10 -p -x \"$HTTPS_PROXY\" https://example.com/ -o /dev/null -w 'proxy=%{http_connect}\\n'"}

	out, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "fetch", Visit: 1,
		Node: graph.Node{ID: "fetch", Kind: graph.KindTool, Run: fetch, Network: &graph.Network{Allow: []string{addr}}}})
	require.NoError(t, err)
	assert.Contains(t, out.Output["stdout"], "REACHED-THE-SITE")
	assert.Contains(t, out.Output["stdout"], "proxy=403")
	assert.Equal(t, []string{"CONNECT example.com:443 refused: not in the node's network allowlist"}, out.Output[NetworkRefusedKey])

	out, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "fetch", Visit: 2,
		Node: graph.Node{ID: "fetch", Kind: graph.KindTool, Run: fetch}})
	require.NoError(t, err)
	assert.NotContains(t, out.Output["stdout"], "REACHED-THE-SITE")
	assert.Contains(t, out.Output["stdout"], "unreachable")
	assert.NotContains(t, out.Output, NetworkRefusedKey, "no proxy at all for a node without network")
}
