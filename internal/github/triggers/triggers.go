// Package triggers reads the triggers file (TETHER_TRIGGERS): which
// repository's events start which graph, with which inputs. It is read
// and checked when the console starts, every problem at once with its
// code, line and column as graphs are (docs/github.md lists the codes),
// and each graph it names is parsed and validated then too.
package triggers

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/github"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/runstore"
)

// Env names the triggers file.
const Env = "TETHER_TRIGGERS"

// File is a triggers file:
//
//	graphs:
//	  fix: ../examples/issue-to-pr.yaml
//	triggers:
//	  - {repo: acme/widgets, label: tether, graph: fix}
//	  - {repo: acme/widgets, command: run, graphs: [fix]}
type File struct {
	// Graphs names graph files, relative to the triggers file.
	Graphs   map[string]string `json:"graphs" yaml:"graphs"`
	Triggers []Trigger         `json:"triggers" yaml:"triggers"`
}

// Trigger starts a graph on a repository's event: an issue labelled
// Label runs Graph; a `/tether run GRAPH` comment (Command "run") runs
// GRAPH when Graphs lists it (every graph when Graphs is empty).
type Trigger struct {
	Repo    string         `json:"repo" yaml:"repo"`
	Label   string         `json:"label,omitempty" yaml:"label,omitempty"`
	Command string         `json:"command,omitempty" yaml:"command,omitempty"`
	Graph   string         `json:"graph,omitempty" yaml:"graph,omitempty"`
	Graphs  []string       `json:"graphs,omitempty" yaml:"graphs,omitempty"`
	Inputs  map[string]any `json:"inputs,omitempty" yaml:"inputs,omitempty"`

	Pos graph.Pos `json:"-" yaml:"-"`
}

// Codes of a triggers file's problems. T001-T005 are the reading
// problems a graph file reports as G001-G005.
const (
	CodeSyntax       = "T001"
	CodeUnknownField = "T002"
	CodeBadValue     = "T003"
	CodeDuplicateKey = "T004"
	CodeNotAFile     = "T005"

	CodeNoTriggers   = "T010" // no triggers
	CodeBadRepo      = "T011" // repo is not owner/name
	CodeBadEvent     = "T012" // neither label nor command, or both
	CodeUnknownGraph = "T013" // a graph the file's graphs do not name
	CodeBadGraph     = "T014" // a graph file that cannot be read or has errors
	CodeBadInput     = "T015" // an input the graph does not declare, or a required one missing
	CodeBadCommand   = "T016" // a command other than run
	CodeBadName      = "T017" // a graph name that cannot be written in a command
)

// Codes lists every code with what it means, in code order.
func Codes() [][2]string {
	return [][2]string{
		{CodeSyntax, "the file is not valid YAML"},
		{CodeUnknownField, "a key a triggers file does not define"},
		{CodeBadValue, "a value of the wrong type"},
		{CodeDuplicateKey, "the same key twice in one mapping"},
		{CodeNotAFile, "the file is empty, holds several documents, or is not a mapping"},
		{CodeNoTriggers, "the file has no triggers"},
		{CodeBadRepo, "a trigger's repo is not owner/name"},
		{CodeBadEvent, "a trigger has neither a label nor a command, or both"},
		{CodeUnknownGraph, "a trigger names a graph that graphs does not"},
		{CodeBadGraph, "a graph file that cannot be read or has errors"},
		{CodeBadInput, "an input the graph does not declare, or a required input nothing gives"},
		{CodeBadCommand, "a command other than run"},
		{CodeBadName, "a graph name that a comment cannot write"},
	}
}

var kind = graph.DocumentKind{
	Name:  "triggers file",
	Shape: "a YAML mapping with graphs (name: file) and triggers (see docs/github.md)",
	Codes: map[string]string{graph.CodeSyntax: CodeSyntax, graph.CodeUnknownField: CodeUnknownField,
		graph.CodeBadValue: CodeBadValue, graph.CodeDuplicateKey: CodeDuplicateKey, graph.CodeNotAGraph: CodeNotAFile},
}

// Triggers is a checked triggers file with its graphs parsed.
type Triggers struct {
	File   File
	graphs map[string]*graph.Graph
}

// Error is a triggers file with problems.
type Error struct {
	Problems graph.Problems
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %d problem(s):\n%s", Env, len(e.Problems.Errors()), e.Problems.String())
}

// Load reads and checks the triggers file at path, and every graph it
// names. Its error is a *Error or a *graph.ParseError, listing every
// problem with its position.
func Load(path string) (*Triggers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w; give the path of a triggers file (docs/github.md)", Env, path, err)
	}
	return Parse(data, path)
}

// Parse reads and checks a triggers file; graph paths are relative to
// file's directory.
func Parse(data []byte, file string) (*Triggers, error) {
	var f File
	src, err := graph.Decode(data, file, &f, kind)
	if err != nil {
		return nil, err
	}
	c := &checker{src: src, file: file, t: &Triggers{File: f, graphs: map[string]*graph.Graph{}}}
	c.check()
	if c.probs.HasErrors() {
		return nil, &Error{Problems: c.probs}
	}
	return c.t, nil
}

type checker struct {
	src   *graph.Source
	file  string
	t     *Triggers
	probs graph.Problems
}

func (c *checker) add(code string, pos graph.Pos, format string, args ...any) {
	c.probs = append(c.probs, graph.Problem{Code: code, Severity: graph.SeverityError, File: c.file, Pos: pos, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) at(path string) graph.Pos {
	if p := c.src.At(path); !p.IsZero() {
		return p
	}
	return c.src.At("")
}

// Its length is checked apart: a counted repetition costs a
// millisecond to compile at every start of tether and the worker.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (c *checker) check() {
	names := make([]string, 0, len(c.t.File.Graphs))
	for name := range c.t.File.Graphs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c.loadGraph(name)
	}
	if len(c.t.File.Triggers) == 0 {
		c.add(CodeNoTriggers, c.at("triggers"), "the triggers file has no triggers; add one, e.g. triggers: [{repo: acme/widgets, label: tether, graph: fix}]")
	}
	for i := range c.t.File.Triggers {
		c.checkTrigger(i)
	}
	c.probs = sortProblems(c.probs)
}

func (c *checker) loadGraph(name string) {
	path := "graphs." + name
	if len(name) > 64 || !nameRE.MatchString(name) {
		c.add(CodeBadName, c.at(path), "graph name %q cannot be written in a comment's `/tether run NAME`; use letters, digits, '_', '.' and '-'", name)
		return
	}
	file := c.t.File.Graphs[name]
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(c.file), file)
	}
	g, err := graph.ParseFile(file)
	if err != nil {
		c.add(CodeBadGraph, c.at(path), "graph %s (%s) cannot be read: %s", name, file, oneLine(err.Error()))
		return
	}
	if ps := graph.Validate(g); ps.HasErrors() {
		c.add(CodeBadGraph, c.at(path), "graph %s (%s) has errors; run `tether validate %s`:\n%s", name, file, file, ps.Errors().String())
		return
	}
	c.t.graphs[name] = g
}

func (c *checker) checkTrigger(i int) {
	tr := &c.t.File.Triggers[i]
	path := fmt.Sprintf("triggers[%d]", i)
	what := fmt.Sprintf("trigger #%d", i+1)
	if !runstore.ValidRepo(tr.Repo) {
		c.add(CodeBadRepo, c.at(path+".repo"), "%s has repo %q; write the repository as owner/name, e.g. acme/widgets", what, tr.Repo)
	}
	switch {
	case tr.Label == "" && tr.Command == "":
		c.add(CodeBadEvent, c.at(path), "%s says neither when it fires nor what; give it a label (an issue labelled so starts its graph) or command: run (a `/tether run GRAPH` comment)", what)
	case tr.Label != "" && tr.Command != "":
		c.add(CodeBadEvent, c.at(path+".command"), "%s has both a label and a command; write one trigger for each", what)
	case tr.Command != "" && tr.Command != github.CmdRun:
		c.add(CodeBadCommand, c.at(path+".command"), "%s has command %q; the only command that starts a run is %q", what, tr.Command, github.CmdRun)
	}
	var graphs []string
	if tr.Label != "" {
		if tr.Graph == "" {
			c.add(CodeUnknownGraph, c.at(path), "%s starts no graph; add graph: NAME, one of the names under graphs", what)
		} else {
			graphs = []string{tr.Graph}
			c.knownGraph(tr.Graph, path+".graph", what)
		}
	}
	if tr.Command != "" {
		if tr.Graph != "" {
			c.add(CodeUnknownGraph, c.at(path+".graph"), "%s is a command: the comment names its graph; list the graphs it may start under graphs: [...] instead", what)
		}
		for _, g := range tr.Graphs {
			c.knownGraph(g, path+".graphs", what)
		}
		graphs = tr.Graphs
		if len(graphs) == 0 {
			graphs = slices.Sorted(mapKeys(c.t.graphs))
		}
	}
	for _, name := range graphs {
		g := c.t.graphs[name]
		if g == nil {
			continue
		}
		c.checkInputs(tr, g, name, path, what)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (c *checker) knownGraph(name, path, what string) {
	if _, ok := c.t.File.Graphs[name]; !ok {
		c.add(CodeUnknownGraph, c.at(path), "%s names graph %q, which graphs does not list; add `%s: path/to/graph.yaml` under graphs", what, name, name)
	}
}

// checkInputs checks a trigger's inputs against graph g: each declared,
// and every required input given by the trigger or the issue.
func (c *checker) checkInputs(tr *Trigger, g *graph.Graph, name, path, what string) {
	declared := map[string]graph.Input{}
	for _, in := range g.Inputs {
		declared[in.Name] = in
	}
	for _, k := range slices.Sorted(mapKeys(tr.Inputs)) {
		if _, ok := declared[k]; !ok {
			c.add(CodeBadInput, c.at(path+".inputs."+k), "%s gives input %q, which graph %s does not declare; declare it in the graph, or remove it", what, k, name)
		}
	}
	for _, in := range g.Inputs {
		_, given := tr.Inputs[in.Name]
		if in.Required && in.Default == nil && !given && !slices.Contains(github.IssueInputs(), in.Name) && tr.Command == "" {
			c.add(CodeBadInput, c.at(path), "graph %s requires input %q, which neither %s nor the issue gives (an issue gives %s); give it under inputs, or a default in the graph", name, in.Name, what, strings.Join(github.IssueInputs(), ", "))
		}
	}
}

// Graph is the graph called name.
func (t *Triggers) Graph(name string) (*graph.Graph, bool) {
	g, ok := t.graphs[name]
	return g, ok
}

func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", "; ")
}

func sortProblems(ps graph.Problems) graph.Problems {
	slices.SortStableFunc(ps, func(a, b graph.Problem) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Column - b.Pos.Column
	})
	return ps
}
