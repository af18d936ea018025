package catalogue

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/testenv"
)

// Generic code never names a backend: outside a backend's own folder
// (internal/backend/<name>), the catalogue's generated registration of
// the folders and its one backend known without a folder, and the
// generated constructors of the registry, no Go file of the product holds
// a backend's name or its CLI's as a string, or imports a backend's
// package. What a backend is, it says itself; everything else asks the
// catalogue. (Tests may name the backend they test.)
func TestGenericCodeNamesNoBackend(t *testing.T) {
	root := testenv.Root()
	names := map[string]bool{}
	for _, b := range All() {
		names[b.Name] = true
		if b.CLI != "" {
			names[b.CLI] = true
		}
	}
	allowed := map[string]bool{
		"internal/catalogue/catalogue.go":               true, // kimi, known without a folder
		"internal/catalogue/entries_gen.go":             true, // the folders' registration
		"internal/catalogue/transcripts/readers_gen.go": true, // and their readers
		"internal/backend/registry_gen.go":              true, // generated from the catalogue
		"internal/backend/gen/registry.go":              true, // the generator's own template
	}
	// Packages that serve tests only: the fake model answers every CLI's
	// API by name; the soak and the one-visit benchmark drive one real CLI
	// (Claude Code) against it, by name, as the suites do.
	testOnly := map[string]bool{
		"internal/fakemodel": true, "internal/testenv": true, "internal/backend/clitest": true,
		"internal/soak": true, "internal/visitbench": true,
	}
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin" || testOnly[rel] {
				return filepath.SkipDir
			}
			if dir, ok := strings.CutPrefix(rel, "internal/backend/"); ok && !strings.Contains(dir, "/") && isBackendFolder(p) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || allowed[rel] {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(path, "github.com/tether-run/tether/internal/backend/")
			if ok && isBackendFolder(filepath.Join(root, "internal", "backend", strings.Split(rest, "/")[0])) {
				t.Errorf("%s imports %s: generic code asks the catalogue, not a backend", rel, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					t.Errorf("%s names the backend or CLI %q", rel, s)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, checked, 100, "the walk found the product's code")
}

// isBackendFolder reports whether dir is a backend's folder: it has the
// facts package every backend declares.
func isBackendFolder(dir string) bool {
	fi, err := filepath.Glob(filepath.Join(dir, "facts", "*.go"))
	return err == nil && len(fi) > 0
}
