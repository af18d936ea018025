package workflows

import (
	"go/ast"
	"go/token"
	"testing"
)

// maxFuncLines bounds a function of the workflow and its activities, so
// each reads in one screen and a change of command order stays visible.
// Tests are exempt: a table of cases is long by nature.
const maxFuncLines = 100

func TestNoFunctionOverAHundredLines(t *testing.T) {
	fs := token.NewFileSet()
	for _, dir := range []string{".", "../activities"} {
		parseSources(t, fs, dir, func(_ string, f *ast.File) {
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
		})
	}
}
