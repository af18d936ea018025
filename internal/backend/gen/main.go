// Command gen writes what follows from the catalogue of backends
// (internal/catalogue): the worker's list of constructors
// (internal/backend/registry_gen.go), the lists of backends and their
// variables in the README and docs/backends.md, between their
// "generated" markers, and the backend enum of the graph's JSON Schema
// (docs/graph.schema.json). `go generate ./internal/backend` runs it; with
// -check it changes nothing and fails when a file is out of date (the
// test of this package runs that in `make test`).
//
// A backend is found by its folder (internal/backend/gen/folders):
// internal/backend/<dir>/facts declares its Name, and internal/backend/<dir>
// its executor's Configured.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether-run/tether/internal/backend/gen/folders"
	"github.com/tether-run/tether/internal/testenv"
)

func main() {
	check := flag.Bool("check", false, "change nothing; fail when a generated file is out of date")
	flag.Parse()
	root := testenv.Root()
	files, err := Generate(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	stale, err := folders.Sync(root, files, *check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if *check && len(stale) > 0 {
		for _, rel := range stale {
			fmt.Fprintf(os.Stderr, "gen: %s is out of date; run go generate ./internal/backend\n", rel)
		}
		os.Exit(1)
	}
}

// Generate returns every generated file's content, by path relative to
// root.
func Generate(root string) (map[string][]byte, error) {
	found, err := folders.Scan(root)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for _, f := range found {
		dirs[f.Name] = f.Dir
	}
	reg, err := registry(dirs)
	if err != nil {
		return nil, err
	}
	env, err := folders.Env(filepath.Join(root, ".env"))
	if err != nil {
		return nil, err
	}
	pins := map[string]string{}
	for _, v := range env {
		pins[v.Name] = v.Value
	}
	out := map[string][]byte{"internal/backend/registry_gen.go": reg}
	for rel, blocks := range map[string]map[string]string{
		"README.md":        {"backend-vars": varsTable()},
		"docs/backends.md": {"backends": backendsTable(pins), "honours": honoursTable()},
	} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		for name, body := range blocks {
			if b, err = replaceBlock(b, name, body); err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
		}
		out[rel] = b
	}
	schema, err := os.ReadFile(filepath.Join(root, "docs", "graph.schema.json"))
	if err != nil {
		return nil, err
	}
	if out["docs/graph.schema.json"], err = schemaBackends(schema); err != nil {
		return nil, fmt.Errorf("docs/graph.schema.json: %w", err)
	}
	return out, nil
}

// replaceBlock puts body between the markers of block name in doc.
func replaceBlock(doc []byte, name, body string) ([]byte, error) {
	begin := fmt.Sprintf("<!-- generated: %s (go generate ./internal/backend) -->\n", name)
	end := fmt.Sprintf("<!-- end of generated: %s -->\n", name)
	i := bytes.Index(doc, []byte(begin))
	j := bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %q … %q markers", strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	var b bytes.Buffer
	b.Write(doc[:i+len(begin)])
	b.WriteString("\n" + body + "\n")
	b.Write(doc[j:])
	return b.Bytes(), nil
}
