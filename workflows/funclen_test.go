package workflows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFuncLines bounds a function of the workflow and its activities, so
// each reads in one screen and a change of command order stays visible.
// Tests are exempt: a table of cases is long by nature.
const maxFuncLines = 100

func TestNoFunctionOverAHundredLines(t *testing.T) {
	fs := token.NewFileSet()
	for _, dir := range []string{".", "../activities"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fs, path, nil, 0)
			require.NoError(t, err)
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				start, end := fs.Position(fn.Pos()).Line, fs.Position(fn.End()).Line
				if n := end - start + 1; n > maxFuncLines {
					t.Errorf("%s: %s is %d lines; split it (at most %d)", fs.Position(fn.Pos()), fn.Name.Name, n, maxFuncLines)
				}
			}
		}
	}
}
