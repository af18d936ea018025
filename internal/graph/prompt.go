package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// PromptData is what an agent node's prompt template sees, under the
// lowercase names the expressions use too:
//
//	.input   the node's input for this visit (a mapping)
//	.output  the node's own output from its previous visit (an empty
//	         mapping on visit 1)
//	.visit      this visit's number, from 1
//	.workspace  what the runtime says of the run's workspace (diff,
//	            commit, base); an empty mapping when it says nothing
type PromptData struct {
	Input     map[string]any
	Output    map[string]any
	Visit     int
	Workspace map[string]any
}

// promptFields are the names a prompt may start a field reference with.
var promptFields = []string{"input", "output", "visit", "workspace"}

var promptFuncs = template.FuncMap{
	// json writes a value as compact JSON with sorted keys, e.g. to show
	// the previous output: {{json .output}}.
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

func parsePrompt(src string) (*template.Template, error) {
	return template.New("prompt").Funcs(promptFuncs).Option("missingkey=error").Parse(src)
}

// RenderPrompt executes an agent node's prompt template. A key missing from
// a mapping is an error rather than "<no value>", so a prompt never silently
// loses a part; test for an optional key with index, which yields nothing
// for a missing key: {{with index .input "feedback"}}Feedback: {{.}}{{end}}.
//
// Deterministic, though workflowcheck cannot prove it: text/template walks
// the data by reflection and ranges over a mapping in sorted key order.
//
//workflowcheck:ignore
func RenderPrompt(tmpl string, data PromptData) (string, error) {
	t, err := parsePrompt(tmpl)
	if err != nil {
		return "", &PromptError{msg: promptMessage(err), err: err}
	}
	orEmpty := func(m map[string]any) map[string]any {
		if m == nil {
			return map[string]any{}
		}
		return m
	}
	var b strings.Builder
	if err := t.Execute(&b, map[string]any{"input": orEmpty(data.Input), "output": orEmpty(data.Output),
		"visit": data.Visit, "workspace": orEmpty(data.Workspace)}); err != nil {
		// Say what the template had to read from: the values it saw.
		return "", &PromptError{msg: fmt.Sprintf("%s; the input it was given has %s", promptMessage(err), keyList(data.Input)), err: err}
	}
	return b.String(), nil
}

// PromptError is a template (a prompt, a question, a tool's argument)
// that did not render: its message says where, and what was missing,
// without the template engine's own prefixes.
type PromptError struct {
	msg string
	err error
}

func (e *PromptError) Error() string { return "graph: template: " + e.msg }
func (e *PromptError) Unwrap() error { return e.err }

// Reason is the message alone, for a caller that names the template
// itself ("node writer: prompt: …").
func (e *PromptError) Reason() string { return e.msg }

// promptMessage is a text/template error as a person reads it:
// `line 1, column 14 (.input.x): map has no entry for key "x"` rather than
// `template: prompt:1:14: executing "prompt" at <.input.x>: …`.
func promptMessage(err error) string {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "template: prompt:")
	if !ok {
		return msg
	}
	pos, detail, ok := strings.Cut(rest, ": ")
	if !ok {
		return msg
	}
	where := "line " + pos
	if line, col, ok := strings.Cut(pos, ":"); ok {
		where = "line " + line + ", column " + col
	}
	if at, ok := strings.CutPrefix(detail, `executing "prompt" at <`); ok {
		if field, reason, ok := strings.Cut(at, ">: "); ok {
			return fmt.Sprintf("%s (%s): %s", where, field, reason)
		}
	}
	return where + ": " + detail
}

// keyList names a map's keys, sorted, or says it is empty.
func keyList(m map[string]any) string {
	if len(m) == 0 {
		return "no keys"
	}
	return "keys " + strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// CheckPrompt reports what is wrong with a prompt template without running
// it: a syntax error, an unknown function, or a field other than .input,
// .output, .visit and .workspace at the top level.
func CheckPrompt(src string) error {
	t, err := parsePrompt(src)
	if err != nil {
		return err
	}
	if t.Tree == nil {
		return nil
	}
	var bad []string
	checkPromptNode(t.Tree.Root, true, &bad)
	if len(bad) > 0 {
		return fmt.Errorf("it refers to %s, which a template does not have; templates see .input (the node's input), .output (its previous output), .visit (the visit number, from 1) and .workspace (the run's workspace: diff, commit, base)", strings.Join(bad, ", "))
	}
	return nil
}

// checkPromptNode collects field references that start from the template's
// top-level data with a name other than input, output, visit and workspace. rootDot
// says whether dot is still the top-level data here (with and range move it).
func checkPromptNode(n parse.Node, rootDot bool, bad *[]string) {
	walkRootFields(n, rootDot, func(ident []string, prefix string) {
		for _, ok := range promptFields {
			if ident[0] == ok {
				return
			}
		}
		ref := prefix + "." + strings.Join(ident, ".")
		for _, seen := range *bad {
			if seen == ref {
				return
			}
		}
		*bad = append(*bad, ref)
	})
}

// InputsRead lists the names a template reads as .input.NAME (or
// $.input.NAME), each once, in the order written; nil for a template that
// does not parse.
func InputsRead(src string) []string {
	t, err := parsePrompt(src)
	if err != nil || t.Tree == nil {
		return nil
	}
	var out []string
	walkRootFields(t.Tree.Root, true, func(ident []string, _ string) {
		if len(ident) > 1 && ident[0] == "input" && !slices.Contains(out, ident[1]) {
			out = append(out, ident[1])
		}
	})
	return out
}

// walkRootFields calls note with each field chain read from the template's
// top-level data (".input.x" as [input x], "$.input.x" with prefix "$").
// rootDot says whether dot is still the top-level data here (with and
// range move it).
func walkRootFields(n parse.Node, rootDot bool, note func(ident []string, prefix string)) {
	walk := func(n parse.Node, rootDot bool) { walkRootFields(n, rootDot, note) }
	// branch walks an if, a with or a range; listDot says whether dot is
	// still the top-level data in its list.
	branch := func(b *parse.BranchNode, listDot bool) {
		walk(b.Pipe, rootDot)
		walk(b.List, listDot)
		walk(b.ElseList, rootDot)
	}
	switch x := n.(type) {
	case nil:
	case *parse.ListNode:
		if x != nil {
			walkEach(x.Nodes, rootDot, note)
		}
	case *parse.ActionNode:
		walk(x.Pipe, rootDot)
	case *parse.PipeNode:
		if x != nil {
			walkEach(x.Cmds, rootDot, note)
		}
	case *parse.CommandNode:
		walkEach(x.Args, rootDot, note)
	case *parse.FieldNode:
		if rootDot && len(x.Ident) > 0 {
			note(x.Ident, "")
		}
	case *parse.VariableNode:
		if len(x.Ident) > 1 && x.Ident[0] == "$" {
			note(x.Ident[1:], "$")
		}
	case *parse.ChainNode:
		walk(x.Node, rootDot)
	case *parse.IfNode:
		branch(&x.BranchNode, rootDot)
	case *parse.WithNode:
		branch(&x.BranchNode, false)
	case *parse.RangeNode:
		branch(&x.BranchNode, false)
	case *parse.TemplateNode:
		walk(x.Pipe, rootDot)
	}
}

// walkEach walks each of nodes as walkRootFields does.
func walkEach[N parse.Node](nodes []N, rootDot bool, note func(ident []string, prefix string)) {
	for _, n := range nodes {
		walkRootFields(n, rootDot, note)
	}
}

// TemplateReason is err's message without the package's prefix: the
// reason alone of a *PromptError, else err's message.
func TemplateReason(err error) string {
	var pe *PromptError
	if errors.As(err, &pe) {
		return pe.Reason()
	}
	return strings.TrimPrefix(err.Error(), "graph: ")
}
