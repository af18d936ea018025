package workflows

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// TestEveryChangeAsksThroughTheBaseline: a change the baseline holds is
// asked for through runImpl.at only, never by a GetVersion of its own,
// which would record a marker in an execution on the baseline that its
// replay, taking the change from the baseline, would not ask for again;
// and the baseline holds every change declared above it in names.go, at
// its version, but the legacy visit's tool affinity.
func TestEveryChangeAsksThroughTheBaseline(t *testing.T) {
	fset := token.NewFileSet()
	values := map[string]string{}
	var order []string // the change… constants of names.go, in order
	type call struct {
		arg string
		at  token.Position
		fn  string
	}
	var calls []call
	parseSources(t, fset, ".", func(f string, file *ast.File) {
		for _, d := range file.Decls {
			fn := ""
			if fd, ok := d.(*ast.FuncDecl); ok {
				fn = fd.Name.Name
			}
			ast.Inspect(d, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					literals(n, func(name, value string) {
						values[name] = value
						if f == "names.go" && strings.HasPrefix(name, "change") {
							order = append(order, name)
						}
					})
				case *ast.CallExpr:
					if !isGetVersion(n) {
						return true
					}
					id, _ := n.Args[1].(*ast.Ident)
					require.NotNil(t, id, "%s", fset.Position(n.Pos()))
					calls = append(calls, call{id.Name, fset.Position(n.Pos()), fn})
				}
				return true
			})
		}
	})
	held := map[string]bool{}
	for id := range baselineChanges {
		held[id] = true
	}
	for _, c := range calls {
		switch {
		case c.arg == "change":
			assert.Contains(t, []string{"at"}, c.fn, "%s: GetVersion with a change parameter outside runImpl.at", c.at)
		case c.arg == "changeBaseline":
			assert.Equal(t, "onBaseline", c.fn, "%s: the baseline is asked for once, in onBaseline", c.at)
		default:
			id, err := strconv.Unquote(values[c.arg])
			require.NoError(t, err, "%s: %s", c.at, c.arg)
			assert.False(t, held[id], "%s: change %q is the baseline's: ask for it with r.at, not GetVersion", c.at, id)
		}
	}
	above := true
	for _, name := range order {
		if name == "changeBaseline" {
			above = false
			continue
		}
		id, err := strconv.Unquote(values[name])
		require.NoError(t, err)
		version, err := strconv.Atoi(values["version"+strings.TrimPrefix(name, "change")])
		require.NoError(t, err)
		switch {
		case name == "changeToolAffinity":
			assert.False(t, held[id], "the legacy visit's tool affinity is no baseline change")
		case above:
			assert.Equal(t, workflow.Version(version), baselineChanges[id], "change %q, declared above the baseline, is the baseline's at its version", id)
		default:
			assert.False(t, held[id], "change %q, declared below the baseline, asks for itself", id)
		}
	}
	assert.False(t, above, "names.go declares changeBaseline")
}

// A run recorded on the baseline asks for the baseline alone (and for the
// changes added after it), and one recorded before asks for its changes
// one by one and is given no baseline.
func TestReplayTakesTheBaselineOnlyWhereItWasRecorded(t *testing.T) {
	on := replay(t, filepath.Join("..", "testdata", "histories", "baseline.json"))
	assert.Equal(t, []workflow.Version{versionBaseline}, on.versions[changeBaseline])
	for id := range on.versions {
		_, held := baselineChanges[id]
		assert.False(t, held, "a run on the baseline asked for change %q", id)
	}
	before := replay(t, filepath.Join("..", "testdata", "histories", "persist-loop-incremental.json"))
	assert.Equal(t, []workflow.Version{workflow.DefaultVersion}, before.versions[changeBaseline])
	assert.Equal(t, []workflow.Version{versionIncrementalPacks}, before.versions[changeIncrementalPacks], "a run recorded before the baseline asks for its changes as it did")
}

// On the baseline a change is taken without asking for it: a visit that
// left a blob behind deletes it, as a run asking for the change at its
// version does (TestOnlyAVisitWithLostBlobsAsksForTheirDeletion), and
// the run asks GetVersion for the baseline alone.
func (s *GraphRunSuite) TestTheBaselineTakesItsChangesWithoutAsking() {
	asked := map[string]int{}
	ids := []string{changeBaseline}
	for id := range baselineChanges {
		ids = append(ids, id)
	}
	for _, id := range ids {
		s.env.OnGetVersion(id, workflow.DefaultVersion, baselineVersion(id)).Run(func(mock.Arguments) { asked[id]++ }).Return(baselineVersion(id))
	}
	s.store.arm("/sessions/writer/", 1, true)
	_, err := s.run(persistLoop, nil)
	s.Require().NoError(err)
	s.Require().NotEmpty(s.store.landedFailed)
	s.Contains(s.store.deleted, s.store.landedFailed[0], "the lost blob is deleted")
	s.Equal(map[string]int{changeBaseline: 1}, asked, "only the baseline is asked for")
}

// baselineVersion is what a new execution is given for change: the
// baseline's own version, or the change's in the baseline.
func baselineVersion(change string) workflow.Version {
	if change == changeBaseline {
		return versionBaseline
	}
	return baselineChanges[change]
}
