package graph

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node's network and limits parse in every form, travel as JSON, encode
// back to what was written, and each mistake has its code.
func TestNetworkAndLimits(t *testing.T) {
	g := mustParse(t, `
name: n
start: fetch
nodes:
  - {id: fetch, kind: tool, run: [go, test], network: {allow: ["proxy.golang.org:443", "*.golang.org:443"]}, limits: {memory: 2GiB, pids: 512, cpu: 1.5, disk: 1GiB}}
  - {id: writer, kind: agent, backend: claude_code, network: model}
  - {id: offline, kind: tool, run: [make], network: none}
  - {id: done, kind: end}
edges:
  - {from: fetch, to: writer}
  - {from: writer, to: offline}
  - {from: offline, to: done}
`)
	require.False(t, Validate(g).HasErrors(), Validate(g).String())
	fetch := g.Nodes[0]
	assert.Equal(t, &Network{Allow: []string{"proxy.golang.org:443", "*.golang.org:443"}}, fetch.Network)
	assert.Equal(t, &Limits{Memory: "2GiB", Pids: 512, CPU: 1.5, Disk: "1GiB"}, fetch.Limits)
	mem, err := fetch.Limits.MemoryBytes()
	require.NoError(t, err)
	assert.Equal(t, int64(2<<30), mem)
	disk, err := fetch.Limits.DiskBytes()
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), disk)
	assert.Equal(t, &Network{Mode: NetworkModel}, g.Nodes[1].Network)
	assert.Equal(t, &Network{Mode: NetworkNone}, g.Nodes[2].Network)

	js, err := json.Marshal(g)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"network":{"allow":["proxy.golang.org:443","*.golang.org:443"]}`)
	assert.Contains(t, string(js), `"network":"model"`)
	var back Graph
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, g.Nodes[0].Network, back.Nodes[0].Network)
	assert.Equal(t, g.Nodes[1].Network, back.Nodes[1].Network)

	out, err := Encode(g)
	require.NoError(t, err)
	again := mustParse(t, string(out))
	assert.Equal(t, g.Nodes[0].Network, again.Nodes[0].Network, string(out))
	assert.Equal(t, g.Nodes[2].Network, again.Nodes[2].Network, string(out))
	assert.Equal(t, g.Nodes[0].Limits, again.Nodes[0].Limits)
}

func TestNetworkAndLimitsProblems(t *testing.T) {
	for name, c := range map[string]struct {
		node, code, says string
	}{
		"unknown mode":       {`{id: a, kind: tool, run: [x], network: open}`, CodeBadNetwork, `network "open"`},
		"model on a tool":    {`{id: a, kind: tool, run: [x], network: model}`, CodeBadNetwork, "a tool has no model"},
		"none on an agent":   {`{id: a, kind: agent, backend: pi, network: none}`, CodeBadNetwork, "cuts it off its own model"},
		"empty allow":        {`{id: a, kind: tool, run: [x], network: {allow: []}}`, CodeBadNetwork, "allows nothing"},
		"no port":            {`{id: a, kind: tool, run: [x], network: {allow: [example.com]}}`, CodeBadAllow, "write host:port"},
		"bad port":           {`{id: a, kind: tool, run: [x], network: {allow: ["example.com:99999"]}}`, CodeBadAllow, "1-65535"},
		"bad host":           {`{id: a, kind: tool, run: [x], network: {allow: ["exa mple.com:443"]}}`, CodeBadAllow, "not a host name"},
		"bad memory":         {`{id: a, kind: tool, run: [x], limits: {memory: lots}}`, CodeBadLimits, "not a size"},
		"tiny memory":        {`{id: a, kind: tool, run: [x], limits: {memory: 1MiB}}`, CodeBadLimits, "too little"},
		"few pids":           {`{id: a, kind: tool, run: [x], limits: {pids: 2}}`, CodeBadLimits, "at least 16"},
		"negative cpu":       {`{id: a, kind: agent, backend: pi, limits: {cpu: -1}}`, CodeBadLimits, "cores"},
		"empty limits":       {`{id: a, kind: tool, run: [x], limits: {}}`, CodeBadLimits, "set nothing"},
		"bad disk":           {`{id: a, kind: tool, run: [x], limits: {disk: plenty}}`, CodeBadLimits, "not a size"},
		"tiny disk":          {`{id: a, kind: tool, run: [x], limits: {disk: 1MiB}}`, CodeBadLimits, "too little"},
		"network on a human": {`{id: a, kind: human, question: q, network: none}`, CodeIgnoredField, "network has no effect"},
		"limits on a join":   {`{id: a, kind: end, limits: {pids: 20}}`, CodeIgnoredField, "limits has no effect"},
	} {
		t.Run(name, func(t *testing.T) {
			g := mustParse(t, "start: a\nnodes:\n  - "+c.node+"\n  - {id: z, kind: end}\nedges: [{from: a, to: z}]\n")
			var found bool
			for _, p := range Validate(g) {
				if p.Code == c.code {
					found = true
					assert.Contains(t, p.Message, c.says)
					assert.False(t, p.Pos.IsZero(), "the problem points at the line")
				}
			}
			assert.True(t, found, "want %s in %s", c.code, Validate(g).String())
		})
	}
	_, err := Parse([]byte("start: a\nnodes: [{id: a, kind: tool, run: [x], network: {allow: [x], deny: [y]}}, {id: z, kind: end}]\n"), "t.yaml")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "G002"), err.Error())
	_, err = Parse([]byte("start: a\nnodes: [{id: a, kind: tool, run: [x], network: {allow: [example.com:443]}}, {id: z, kind: end}]\n"), "t.yaml")
	require.Error(t, err, "an unquoted pattern in a flow list reads as a mapping")
	assert.Contains(t, err.Error(), `quoted "host:port"`)
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1024": 1024, "512MiB": 512 << 20, "2GiB": 2 << 30, "1.5G": 3 << 29, "100MB": 100e6, "64 Mi": 64 << 20} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"x", "-1G", "5 parsecs"} {
		_, err := ParseSize(in)
		assert.Error(t, err, in)
	}
}
