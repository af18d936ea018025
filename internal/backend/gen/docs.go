package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
)

// implemented lists the backends this build runs, in catalogue order.
func implemented() []agent.Facts {
	var out []agent.Facts
	for _, b := range catalogue.All() {
		if b.Implemented {
			out = append(out, b)
		}
	}
	return out
}

func code(s string) string { return "`" + s + "`" }

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// varsTable is the README's table of the agent backends' variables.
func varsTable() string {
	var b strings.Builder
	b.WriteString("| variable | read for | meaning |\n|---|---|---|\n")
	var clis []string
	for _, f := range implemented() {
		if f.CLI != "" {
			clis = append(clis, code(f.CLI))
		}
	}
	fmt.Fprintf(&b, "| `TETHER_CLI_BIN` | every CLI backend | the directory holding the agent CLIs (%s), never inside a home directory (the worker refuses to start: a confined agent reads the bin directory and where its links lead); default: `PATH` |\n", strings.Join(clis, ", "))
	type row struct {
		backends, docs []string
	}
	rows := map[string]*row{}
	var order []string
	for _, f := range implemented() {
		for _, v := range f.Vars {
			r, ok := rows[v.Name]
			if !ok {
				r = &row{}
				rows[v.Name] = r
				order = append(order, v.Name)
			}
			r.backends = append(r.backends, code(f.Name))
			if !slices.Contains(r.docs, v.Doc) {
				r.docs = append(r.docs, v.Doc)
			}
		}
	}
	for _, name := range order {
		r := rows[name]
		fmt.Fprintf(&b, "| %s | %s | %s |\n", code(name), strings.Join(r.backends, ", "), strings.Join(r.docs, "; "))
	}
	return b.String()
}

// backendsTable is docs/backends.md's table of the backends: what each
// runs, where its CLI is pinned, and its capabilities.
func backendsTable(pins map[string]string) string {
	var b strings.Builder
	b.WriteString("| backend | program | pinned in `.env` | persist | reports cost | model API |\n|---|---|---|---|---|---|\n")
	for _, f := range implemented() {
		prog, pin, wire := "built in", "—", "—"
		if f.CLI != "" {
			prog = code(f.CLI)
		}
		if f.Pin != "" {
			pin = code(f.Pin + "=" + pins[f.Pin])
		}
		if f.Wire != "" {
			wire = f.Wire
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", code(f.Name), prog, pin, yes(f.Persist), yes(!f.NoCost), wire)
	}
	return b.String()
}

// honoursTable is docs/backends.md's table of which backend applies which
// agent setting (the others are refused by validation, G044).
func honoursTable() string {
	var b strings.Builder
	fs := implemented()
	b.WriteString("| setting |")
	for _, f := range fs {
		b.WriteString(" " + code(f.Name) + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(fs)) + "\n")
	for _, s := range agent.AllSettings {
		b.WriteString("| " + code(s) + " |")
		for _, f := range fs {
			b.WriteString(" " + yes(slices.Contains(f.Honours, s)) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// schemaBackends rewrites the enum of $defs.backend in the graph's JSON
// Schema (docs/graph.schema.json) to the backends this build runs.
func schemaBackends(doc []byte) ([]byte, error) {
	s := string(doc)
	i := strings.Index(s, `"backend": {`)
	if i < 0 {
		return nil, fmt.Errorf(`no "backend" definition`)
	}
	j := strings.Index(s[i:], `"enum": [`)
	if j < 0 {
		return nil, fmt.Errorf(`the "backend" definition has no enum`)
	}
	start := i + j + len(`"enum": [`)
	end := strings.Index(s[start:], "]")
	if end < 0 {
		return nil, fmt.Errorf(`the "backend" enum does not end`)
	}
	lineStart := strings.LastIndex(s[:i+j], "\n") + 1
	indent := s[lineStart : i+j]
	var b strings.Builder
	for k, f := range implemented() {
		if k > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n%s  %q", indent, f.Name)
	}
	b.WriteString("\n" + indent)
	return []byte(s[:start] + b.String() + s[start+end:]), nil
}
