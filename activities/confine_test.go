package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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

// A tool node's `limits:` reach its sandbox: a visit that goes over its
// memory is ended, one under it runs.
func TestToolMemoryLimit(t *testing.T) {
	a := newActs(t, blob.NewMem())
	a.Sandbox = sandboxtest.New(t)
	hog := []string{"/bin/sh", "-c", `x=$(head -c 300000000 /dev/zero | tr '\0' a); echo "survived ${#x}"`}
	out, err := a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "hog", Visit: 1,
		Node: graph.Node{ID: "hog", Kind: graph.KindTool, Run: hog, Limits: &graph.Limits{Memory: "96MiB"}}})
	require.NoError(t, err)
	assert.NotContains(t, out.Output["stdout"], "survived")
	assert.NotEqual(t, 0, out.Output["exit_code"])
	if !strings.Contains(a.Sandbox.String(), "a cgroup per visit") {
		// Without a cgroup, the helper's watch ends it and says why.
		assert.Contains(t, out.Output["stderr"], "over the node's limit of 96 MiB")
	}

	out, err = a.Visit(context.Background(), &VisitRequest{RunID: "r1", NodeID: "hog", Visit: 2,
		Node: graph.Node{ID: "hog", Kind: graph.KindTool, Run: hog}})
	require.NoError(t, err)
	assert.Contains(t, out.Output["stdout"], "survived 300000000", "the default limit lets it run")
}
