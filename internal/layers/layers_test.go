package layers

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

const module = "github.com/tether-run/tether"

// maxGraphDeps bounds what graph validation links (`go list -deps
// ./internal/graph`, the standard library included): the DSL is read by
// the CLI and the worker alike, and links no network client, executor or
// store.
const maxGraphDeps = 130

// goList runs go list in the module's root and returns its output's
// fields, one line per package.
func goList(t *testing.T, args ...string) [][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = testenv.Root()
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v", args)
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		lines = append(lines, strings.Fields(l))
	}
	return lines
}

// imports are the module's packages (relative to it) and, for each, the
// module's packages it imports: the product's imports, not its tests'
// (a test may reach up to check the code below it against the real
// thing, as the workspace's test packs a session).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range goList(t, "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...") {
		var deps []string
		for _, d := range f[1:] {
			if rel, ok := relative(d); ok {
				deps = append(deps, rel)
			}
		}
		rel, _ := relative(f[0])
		out[rel] = deps
	}
	return out
}

func relative(pkg string) (string, bool) {
	if pkg == module {
		return "", true
	}
	return strings.CutPrefix(pkg, module+"/")
}

// Every package stands on one floor of Floors, and every import points
// down or sideways within a floor: never up. A new package, or an import
// that climbs, fails here with what to do; the graph of imports has no
// cycle.
func TestImportsPointDown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := imports(t)
	require.Greater(t, len(pkgs), 50, "go list found the module's packages")
	used := map[string]bool{}
	floor := map[string]int{}
	for _, p := range sortedKeys(pkgs) {
		f, pat, ok := FloorOf(p)
		if !ok {
			t.Errorf("package %s stands on no floor (or on two): add it to one in internal/layers.Floors, below everything that imports it and above everything it imports, and to docs/architecture.md's drawing", p)
			continue
		}
		floor[p], used[pat] = f, true
	}
	for _, c := range climbs(pkgs, floor) {
		t.Errorf("%s: hand what it needs down to it instead (as the backends' facts reach the packer), or move the code to the floor it belongs on", c)
	}
	for _, f := range Floors {
		for _, pat := range f.Packages {
			assert.True(t, used[pat], "floor %q lists %s, which places no package: remove it", f.Name, pat)
		}
	}
	assert.Empty(t, cycle(pkgs), "a cycle of imports")
}

// climbs are the imports in pkgs that point up a floor.
func climbs(pkgs map[string][]string, floor map[string]int) []string {
	var out []string
	for _, p := range sortedKeys(pkgs) {
		for _, d := range pkgs[p] {
			from, okFrom := floor[p]
			to, okTo := floor[d]
			if okFrom && okTo && to < from {
				out = append(out, fmt.Sprintf("%s (floor %q) imports %s, on floor %q above it", p, Floors[from].Name, d, Floors[to].Name))
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// cycle returns a cycle of imports in pkgs, nil when there is none.
func cycle(pkgs map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack, found []string
	var visit func(p string) bool
	visit = func(p string) bool {
		state[p] = open
		stack = append(stack, p)
		for _, d := range pkgs[p] {
			switch state[d] {
			case open:
				found = append(slices.Clone(stack[slices.Index(stack, d):]), d)
				return true
			case unseen:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[p] = done
		return false
	}
	for _, p := range sortedKeys(pkgs) {
		if state[p] == unseen && visit(p) {
			return found
		}
	}
	return nil
}

// The check above would catch what it is meant to: an import up a floor
// and a cycle.
func TestTheCheckCatchesClimbsAndCycles(t *testing.T) {
	f := func(p string) int { n, _, ok := FloorOf(p); require.True(t, ok, p); return n }
	assert.Less(t, f("internal/catalogue"), f("internal/backend/claude/facts"), "facts stand below the catalogue")
	assert.Less(t, f("internal/backend/claude"), f("internal/backend/cliexec"), "an executor stands above cliexec")
	assert.Equal(t, 0, f("internal/backend/gen"), "an exact pattern beats a wildcard")
	_, _, ok := FloorOf("internal/nowhere")
	assert.False(t, ok)
	floor := map[string]int{}
	for _, p := range []string{"internal/agent", "internal/graph", "internal/runstore", "internal/blob"} {
		floor[p] = f(p)
	}
	assert.Len(t, climbs(map[string][]string{"internal/agent": {"internal/graph"}, "internal/runstore": {"internal/blob", "internal/agent"}}, floor), 1)
	assert.Equal(t, []string{"a", "b", "a"}, cycle(map[string][]string{"a": {"b"}, "b": {"a"}, "c": nil}))
	assert.Nil(t, cycle(map[string][]string{"a": {"b"}, "b": nil}))
}

// Arrows taken out that the floors alone would let back in: what these
// packages need is handed to them, so none links what it once looked
// things up in (transitively, through any import).
var unlinked = map[string][]string{
	// Executors keep the facts they are given (cliexec.CLI.Facts); see
	// also TestExecutorsLookNothingUp.
	"internal/backend/cliexec": {"internal/graph", "internal/catalogue/transcripts"},
	// The packer takes the session policy (packer.WithPolicy).
	"internal/packer": {"internal/catalogue", "internal/backend/*/facts"},
	// The conversation reader takes the transcript readers (Readers).
	"internal/conversation": {"internal/catalogue", "internal/backend/*/session", "internal/graph"},
	// The run store keeps a checkpoint's graph as bytes.
	"internal/runstore": {"internal/graph", "internal/catalogue"},
	// Graph validation reads host:port patterns from a leaf, and only the
	// backends' facts: no transcript reader.
	"internal/graph": {"internal/egress", "internal/sandbox", "internal/backend/*/session", "internal/catalogue/transcripts"},
}

func TestRemovedArrowsStayRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := imports(t)
	for _, p := range sortedKeys(unlinked) {
		reach := map[string]bool{}
		var walk func(string)
		walk = func(q string) {
			for _, d := range pkgs[q] {
				if !reach[d] {
					reach[d] = true
					walk(d)
				}
			}
		}
		walk(p)
		for _, pat := range unlinked[p] {
			for _, d := range sortedKeys(reach) {
				if m, _ := path.Match(pat, d); m {
					t.Errorf("%s links %s again (through its imports); hand it what it needs instead", p, d)
				}
			}
		}
	}
	for _, d := range goList(t, "-deps", "./internal/graph") {
		assert.NotEqual(t, "net/http", d[0], "graph validation links no HTTP client or server")
	}
}

// An executor keeps the facts it is built with (cliexec.CLI.Facts) and
// looks no backend up by name: cliexec reads the catalogue only for what
// is every backend's at once (the model keys' names no process gets,
// catalogue.KeyVars).
func TestExecutorsLookNothingUp(t *testing.T) {
	dir := filepath.Join(testenv.Root(), "internal", "backend", "cliexec")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		checked++
		for _, call := range []string{"catalogue.Lookup(", "catalogue.All(", "catalogue.Honours(", "catalogue.HasPersist("} {
			assert.NotContains(t, string(src), call, "%s looks a backend up in the catalogue; read the CLI's Facts", filepath.Base(f))
		}
	}
	assert.Greater(t, checked, 5)
}

// figures matches the figures docs/architecture.md states.
var figures = regexp.MustCompile("(\\d+) packages on (\\d+) floors.*?`internal/graph` links (\\d+) packages.*?`tether` links (\\d+)")

// docs/architecture.md's figures are true: the module's packages and the
// floors they stand on, what graph validation links (at most
// maxGraphDeps) and what the `tether` CLI links.
func TestArchitectureFiguresAreTrue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	doc, err := os.ReadFile(filepath.Join(testenv.Root(), "docs", "architecture.md"))
	require.NoError(t, err)
	m := figures.FindStringSubmatch(strings.Join(strings.Fields(string(doc)), " "))
	require.NotNil(t, m, "docs/architecture.md states its figures: N packages on N floors, `internal/graph` links N packages, `tether` links N")
	stated := func(i int) int { n, _ := strconv.Atoi(m[i]); return n }
	graphDeps := len(goList(t, "-deps", "./internal/graph"))
	assert.LessOrEqual(t, graphDeps, maxGraphDeps, "internal/graph links %d packages; see which import brought the rest in with `go list -deps ./internal/graph`", graphDeps)
	for what, c := range map[string][2]int{
		"packages":                      {stated(1), len(goList(t, "./..."))},
		"floors":                        {stated(2), len(Floors)},
		"packages internal/graph links": {stated(3), graphDeps},
		"packages tether links":         {stated(4), len(goList(t, "-deps", "./starter"))},
	} {
		assert.Equal(t, c[1], c[0], "docs/architecture.md says %d %s; it is %d now: write that", c[0], what, c[1])
	}
}
