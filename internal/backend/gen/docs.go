package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/agent"
	"github.com/tether-run/tether/internal/catalogue"
)

// readPins reads the repository's .env: NAME=value lines.
func readPins(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out, sc.Err()
}

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
	fmt.Fprintf(&b, "| `TETHER_CLI_BIN` | every CLI backend | the directory holding the agent CLIs (%s); default: `PATH` |\n", strings.Join(clis, ", "))
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
