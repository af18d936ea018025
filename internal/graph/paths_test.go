package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool's program and a workdir are never taken through "..": the text
// `s/../../x` names, lexically, another place than the kernel reaches
// when s is a link (the attack that bound any host directory into a
// tool's sandbox). Each is refused with its code, at its line; a program
// by name, by a path in the workspace or by an absolute path is fine.
func TestPathsThroughDotDotAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		node, code, says string
	}{
		"program through a planted link": {`{id: a, kind: tool, run: ["{{.input.dir}}/s/../../../root/secret/x"]}`, CodeProgramClimbs, `climbs with ".."`},
		"relative program":               {`{id: a, kind: tool, run: [../bin/x]}`, CodeProgramClimbs, "without"},
		"workdir out of the workspace":   {`{id: a, kind: agent, backend: pi, workdir: ../other-run}`, CodeBadWorkdir, `climbs with ".."`},
		"absolute workdir through ..":    {`{id: a, kind: agent, backend: pi, workdir: /srv/checkouts/../../root}`, CodeBadWorkdir, "TETHER_WORKDIR_ROOTS"},
	} {
		t.Run(name, func(t *testing.T) {
			g := mustParse(t, "start: a\nnodes:\n  - "+c.node+"\n  - {id: z, kind: end}\nedges: [{from: a, to: z}]\n")
			ps := Validate(g)
			var found bool
			for _, p := range ps {
				if p.Code == c.code {
					found = true
					assert.Contains(t, p.Message, c.says)
					assert.False(t, p.Pos.IsZero(), "the problem points at the line")
				}
			}
			assert.True(t, found, "want %s in %s", c.code, ps.String())
		})
	}
	for _, node := range []string{
		`{id: a, kind: tool, run: [go, test, ./...]}`,
		`{id: a, kind: tool, run: [./scripts/check.sh]}`,
		`{id: a, kind: tool, run: [/usr/bin/make, ..]}`, // only the program is a path the sandbox resolves
		`{id: a, kind: tool, run: ["{{.input.dir}}/bin/x..y"]}`,
		`{id: a, kind: agent, backend: pi, workdir: sub/dir}`,
		`{id: a, kind: agent, backend: pi, workdir: /srv/checkouts/a}`,
	} {
		g := mustParse(t, "start: a\nnodes:\n  - "+node+"\n  - {id: z, kind: end}\nedges: [{from: a, to: z}]\n")
		require.False(t, Validate(g).HasErrors(), "%s: %s", node, Validate(g).String())
	}
	assert.True(t, ClimbsOut("a/../b"))
	assert.True(t, ClimbsOut(".."))
	assert.False(t, ClimbsOut("a/..b/c"))
}
