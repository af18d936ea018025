package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/catalogue"
	"github.com/tether-run/tether/internal/testenv"
)

// Every repository path the documentation names exists: a relative link,
// or a path in backticks under one of the project's top folders. A doc
// that sends a reader to a file that moved is a wrong doc.
func TestDocsNameOnlyPathsThatExist(t *testing.T) {
	root := testenv.Root()
	link := regexp.MustCompile(`\]\(([^)#:\s]+)(#[^)]*)?\)`)
	ticked := regexp.MustCompile("`((?:activities|workflows|worker|starter|internal|scripts|deploy|docs|examples|testdata)/[A-Za-z0-9_./-]+)`")
	symbol := regexp.MustCompile(`^([a-z0-9_/]+)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z_][A-Za-z0-9_]*)?(?:/.*)?$`)
	checked := 0
	eachDoc(t, root, func(doc, rel string, b []byte) {
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			checked++
			assert.FileExists(t, filepath.Join(filepath.Dir(doc), m[1]), "%s links to %s", rel, m[1])
		}
		for _, m := range ticked.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimSuffix(m[1], "/")
			if strings.ContainsAny(p, "*<>") || strings.HasSuffix(p, "...") {
				continue // a pattern, not a path
			}
			checked++
			// internal/e2e.TestX/sub and internal/resolve.Resolve name a
			// symbol of a package: the package has it.
			if _, err := os.Stat(filepath.Join(root, p)); err == nil {
				continue
			}
			if s := symbol.FindStringSubmatch(p); s != nil {
				assert.True(t, declares(t, filepath.Join(root, s[1]), s[2]), "%s names %s, which package %s does not declare", rel, m[1], s[1])
				continue
			}
			_, err := os.Stat(filepath.Join(root, p))
			assert.NoError(t, err, "%s names %s", rel, m[1])
		}
	})
	assert.Greater(t, checked, 20, "the test found the docs' paths")
}

// declares reports whether a Go file of the package in dir declares name
// (a func, a method, a type, a var or a const).
func declares(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	decl := regexp.MustCompile(`(?m)^(func (\([^)]*\) )?|type |var |const |\t)` + regexp.QuoteMeta(name) + `\b`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if decl.Match(b) {
			return true
		}
	}
	return false
}

// Every test, benchmark and fuzz target the documentation names in
// backticks exists (a function or a suite method of some _test.go file):
// a doc that cites a test that was renamed or dropped claims a proof
// that is not there.
func TestDocsNameOnlyTestsThatExist(t *testing.T) {
	root := testenv.Root()
	declared := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (?:\([^)]*\) )?((?:Test|Benchmark|Fuzz)\w+)\(`)
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			declared[string(m[1])] = true
		}
		return nil
	}))
	cited := regexp.MustCompile("`(?:[a-z0-9_/]+\\.)?((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)(\\*?)")
	checked := 0
	eachDoc(t, root, func(doc, rel string, b []byte) {
		for _, m := range cited.FindAllStringSubmatch(string(b), -1) {
			checked++
			if m[2] == "*" { // a pattern: some test has the prefix
				found := false
				for name := range declared {
					found = found || strings.HasPrefix(name, m[1])
				}
				assert.True(t, found, "%s cites %s*, which no test file declares", rel, m[1])
				continue
			}
			assert.True(t, declared[m[1]], "%s cites %s, which no test file declares", rel, m[1])
		}
	})
	assert.Greater(t, checked, 50, "the test found the docs' tests")
}

// A line of the documentation that names three or more backends (in
// backticks) names all of them, all that run a CLI, or all with the
// persist capability, unless it says the list goes on ("…", "e.g."):
// a hand-written partial list of backends is how the docs fell behind
// each new one. The generated tables (go generate ./internal/backend)
// are right by construction.
func TestDocsListEveryBackend(t *testing.T) {
	root := testenv.Root()
	var all, clis, persist []string
	for _, b := range catalogue.All() {
		if !b.Implemented {
			continue
		}
		all = append(all, b.Name)
		if b.CLI != "" {
			clis = append(clis, b.Name)
		}
		if b.Persist {
			persist = append(persist, b.Name)
		}
	}
	eachDoc(t, root, func(doc, rel string, b []byte) {
		generated := false
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "<!-- generated: "):
				generated = true
			case strings.HasPrefix(line, "<!-- end of generated: "):
				generated = false
			}
			if generated || strings.Contains(line, "…") || strings.Contains(line, "e.g.") {
				continue
			}
			var named []string
			for _, n := range all {
				if strings.Contains(line, "`"+n+"`") {
					named = append(named, n)
				}
			}
			if len(named) >= 3 && !slices.Equal(named, all) && !slices.Equal(named, clis) && !slices.Equal(named, persist) {
				t.Errorf("%s:%d names the backends %v, not all of them (%v): list them all, point to backends.md, or say the list goes on", rel, i+1, named, all)
			}
		}
	})
}

// eachDoc calls each with every doc a reader is sent to (docs/*.md and the
// README): its path, its path from root, and its text.
func eachDoc(t *testing.T, root string, each func(doc, rel string, b []byte)) {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, doc)
		each(doc, rel, b)
	}
}
